package model

import "net/http"

// NoRedirects returns a copy of c (nil: a client on net/http's default
// transport) that never follows a redirect; the provider then answers the
// 3xx as the error it is. Every provider's HTTP client is made by it,
// because one Generate must stay one billed call: a followed 307 or 308
// re-sends the POST, a second generation behind the claim's back
// (docs/decisions.md, "Model HTTP client"). The copy keeps c's
// transport and timeout, so a transport built by the AWS SDK (which
// honours AWS_CA_BUNDLE and proxies) still carries the call.
func NoRedirects(c *http.Client) *http.Client {
	var cp http.Client
	if c != nil {
		cp = *c
	}
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}
