package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestEveryRequestNeedsTheAccessToken: without the token, or with another,
// nothing is read; the printed URL's first visit trades it for a cookie
// that a script's bearer token may stand in for.
func TestEveryRequestNeedsTheAccessToken(t *testing.T) {
	f := setup(t)
	for _, c := range []struct {
		name, path string
		header     []string
		status     int
		code       string
	}{
		{"no token", "/failures?since=100000h", []string{"Authorization", ""}, http.StatusUnauthorized, "token_required"},
		{"another bearer token", "/failures?since=100000h", []string{"Authorization", "Bearer test-acces"}, http.StatusUnauthorized, "token_required"},
		{"another cookie", "/failures?since=100000h", []string{"Authorization", "", "Cookie", cookieOf(t, f) + "x"}, http.StatusUnauthorized, "token_required"},
		{"another token in the URL", "/failures?since=100000h&token=guess", []string{"Authorization", ""}, http.StatusUnauthorized, "token_refused"},
		{"a static asset", "/static/console.css", []string{"Authorization", ""}, http.StatusUnauthorized, "token_required"},
		{"a POST", "/replay", []string{"Authorization", ""}, http.StatusUnauthorized, "token_required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var code int
			var body string
			if c.path == "/replay" {
				code, body = f.post(t, c.path, nil, c.header...)
			} else {
				code, body = f.get(t, c.path, c.header...)
			}
			if code != c.status || problemCode(t, body) != c.code {
				t.Fatalf("%d %s, want %d %s", code, body, c.status, c.code)
			}
		})
	}
	if n := f.store.failures.Load() + f.store.recent.Load(); n != 0 {
		t.Fatalf("refused requests read the store %d times", n)
	}
	if strings.Contains(f.log.String(), access) || strings.Contains(f.log.String(), "guess") {
		t.Fatalf("the log shows a token: %s", f.log)
	}
	if code, _ := f.get(t, "/failures?since=1h", "Authorization", "", "Cookie", cookieOf(t, f)); code != http.StatusOK {
		t.Fatalf("with the cookie: %d", code)
	}
	if code, _ := f.get(t, "/static/console.css"); code != http.StatusOK {
		t.Fatalf("with the bearer token: %d", code)
	}
}

// cookieOf visits the printed URL (here on /failures, with a query) and
// checks the answer: a cookie only the console's own site sends, and a
// redirect to the same page without the token in the address bar.
func cookieOf(t *testing.T, f *fixture) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/failures?since=1h&token="+access, nil)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/failures?since=1h" {
		t.Fatalf("the token URL: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cks := resp.Cookies()
	if len(cks) != 1 || cks[0].Value != access || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteStrictMode || cks[0].Path != "/" || cks[0].Secure {
		t.Fatalf("cookie %+v", cks)
	}
	if !strings.HasPrefix(cks[0].Name, "aijobs_console_") || strings.Contains(cks[0].Name, access) {
		t.Fatalf("cookie name %q", cks[0].Name)
	}
	return cks[0].Name + "=" + cks[0].Value
}

// TestABrowserRequestFromAnotherSiteIsRefused: Fetch Metadata says where a
// browser's request comes from. Another site, or another port of this
// host (the same site to SameSite, which would send the cookie), gets
// nothing, even with the token; the console's own pages and an address
// typed in get through.
func TestABrowserRequestFromAnotherSiteIsRefused(t *testing.T) {
	f := setup(t)
	for site, want := range map[string]int{"cross-site": http.StatusForbidden, "same-site": http.StatusForbidden,
		"same-origin": http.StatusOK, "none": http.StatusOK} {
		code, body := f.get(t, "/failures?since=100000h", "Sec-Fetch-Site", site)
		if code != want || (want == http.StatusForbidden && problemCode(t, body) != "cross_site_refused") {
			t.Errorf("Sec-Fetch-Site %s: %d %s, want %d", site, code, body, want)
		}
	}
	if n := f.store.failures.Load(); n != 2 {
		t.Fatalf("the failure index was read %d times, want 2 (same-origin and none)", n)
	}
}
