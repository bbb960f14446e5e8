package model_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/model"
)

// The one client policy every provider shares: a redirect is answered,
// never followed (a followed 307 re-sends the POST, a second billed call),
// and what the caller configured is kept.
func TestNoRedirects(t *testing.T) {
	followed := make(chan string, 4)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/elsewhere", func(_ http.ResponseWriter, r *http.Request) { followed <- r.Method })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	given := &http.Client{Transport: srv.Client().Transport, Timeout: 7 * time.Second}
	for name, c := range map[string]*http.Client{"nil": model.NoRedirects(nil), "given": model.NoRedirects(given)} {
		resp, err := c.Post(srv.URL+"/v1", "application/json", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("%s: status %d, want the 307 itself", name, resp.StatusCode)
		}
	}
	if n := len(followed); n != 0 {
		t.Fatalf("%d redirects followed", n)
	}
	c := model.NoRedirects(given)
	if c == given || given.CheckRedirect != nil {
		t.Fatal("NoRedirects changed the caller's client")
	}
	if c.Transport != given.Transport || c.Timeout != given.Timeout {
		t.Fatalf("the copy lost the transport or the timeout: %+v", c)
	}
}
