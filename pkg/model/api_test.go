package model_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

func TestAPIRequestsCarryItsHeaders(t *testing.T) {
	a := model.API{Provider: "p", Header: http.Header{"X-Api-Key": {"k"}}}
	hr, err := a.Request(context.Background(), http.MethodPost, "http://h/x", strings.NewReader("{}"))
	if err != nil || hr.Header.Get("X-Api-Key") != "k" || hr.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("with a body: %v, %v", hr.Header, err)
	}
	hr.Header.Set("X-Api-Key", "changed")
	if a.Header.Get("X-Api-Key") != "k" {
		t.Error("a request's header is the API's own: changing one changed every later request")
	}
	hr, _ = a.Request(context.Background(), http.MethodGet, "http://h/x", nil)
	if hr.Header.Get("Content-Type") != "" {
		t.Errorf("a request without a body says its content type: %q", hr.Header.Get("Content-Type"))
	}
}

func TestAPIFailuresAreClassified(t *testing.T) {
	a := model.API{Provider: "p"}
	var me *model.Error
	if _, err := a.Request(context.Background(), http.MethodGet, "http://h/\x7f", nil); !errors.As(err, &me) ||
		me.Class != job.InvalidRequest || me.Detail != "p: bad base URL" {
		t.Errorf("a bad URL: %v", err)
	}
	if _, err := a.Encode(make(chan int)); !errors.As(err, &me) || me.Class != job.Internal || me.Detail != "p: encode request" {
		t.Errorf("a value that does not encode: %v", err)
	}
}

func TestErrorBodyIsBounded(t *testing.T) {
	if n := len(model.ErrorBody(strings.NewReader(strings.Repeat("x", 100<<10)))); n != 64<<10 {
		t.Errorf("read %d bytes of an error body, want 64 KiB", n)
	}
}

// A generation's request asks for a stream only when streamed, and
// traces its sending: Sent is done once the server has it.
func TestAPIPostTracesItsSending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", r.Header)
		}
	}))
	defer srv.Close()
	a := model.API{Provider: "p"}
	hr, sent, err := a.Post(context.Background(), srv.URL, map[string]int{"n": 1}, true)
	if err != nil || sent.Done() {
		t.Fatalf("before sending: done %v, %v", sent != nil && sent.Done(), err)
	}
	resp, err := srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if !sent.Done() {
		t.Error("a request the server answered is not traced as sent")
	}
	if hr, _, _ := a.Post(context.Background(), srv.URL, nil, false); hr.Header.Get("Accept") != "" {
		t.Errorf("a request not streamed asks for %q", hr.Header.Get("Accept"))
	}
	if _, _, err := a.Post(context.Background(), srv.URL, make(chan int), false); err == nil {
		t.Error("a value that does not encode was posted")
	}
}
