package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// Who may use the console. Loopback alone is no gate: every local user of
// a shared host reaches 127.0.0.1, and any page in the operator's browser
// can send it GETs (an expensive /failures?since=100000h, say) that run
// with the operator's AWS credentials. So every request also carries the
// process's access token, the way Jupyter's server does: printed once at
// start inside a URL; that URL's first visit trades it for a cookie
// (HttpOnly, SameSite=Strict) and drops it from the address bar; a script
// may send it as a bearer token instead. A browser request that says it
// comes from another site or another origin (Fetch Metadata, the
// Sec-Fetch-Site header) is refused before anything else, since SameSite
// counts 127.0.0.1:8000 and 127.0.0.1:9090 as one site and would send the
// cookie from the other port's page. docs/cli.md, "console", has the
// operator's side.

// tokenParam is the query parameter of the URL the console prints.
const tokenParam = "token"

// AccessURL is the URL to open: base (scheme and host of the listener)
// with the access token, which its first visit trades for a cookie.
func (c *Console) AccessURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/?" + tokenParam + "=" + url.QueryEscape(c.cfg.Access)
}

// cookieName is per access token, so two consoles on two ports of one
// host (cookies ignore ports) do not overwrite each other's; the name
// shows nothing of the token.
func (c *Console) cookieName() string {
	sum := sha256.Sum256([]byte("aijobs-console-cookie\x00" + c.cfg.Access))
	return "aijobs_console_" + hex.EncodeToString(sum[:4])
}

// admitted answers false, having answered the request, unless it may go
// on: not refused by its fetch metadata, and carrying the access token as
// the cookie or a bearer token. A URL with the token sets the cookie and
// redirects to itself without it.
func (c *Console) admitted(w http.ResponseWriter, r *http.Request) bool {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "none", "same-origin": // not a browser, typed or bookmarked, the console's own pages
	default:
		c.refused(w, r, http.StatusForbidden, "cross_site_refused", "the console answers its own pages and addresses typed in, not requests from another site or port")
		return false
	}
	if given := r.URL.Query().Get(tokenParam); given != "" {
		if !c.isAccess(given) {
			c.refused(w, r, http.StatusUnauthorized, "token_refused", "this is not the console's access token: open the URL `aijobs console` printed when it started")
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: c.cfg.Access, Path: "/", HttpOnly: true,
			Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del(tokenParam)
		to := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, to.String(), http.StatusSeeOther)
		return false
	}
	if ck, err := r.Cookie(c.cookieName()); err == nil && c.isAccess(ck.Value) {
		return true
	}
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && c.isAccess(auth) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="aijobs console"`)
	c.refused(w, r, http.StatusUnauthorized, "token_required", "the console needs its access token: open the URL `aijobs console` printed when it started")
	return false
}

func (c *Console) isAccess(given string) bool {
	return subtle.ConstantTimeCompare([]byte(given), []byte(c.cfg.Access)) == 1
}

// refused answers a problem and logs it by path (never the query, which
// may hold a token).
func (c *Console) refused(w http.ResponseWriter, r *http.Request, status int, code, detail string) {
	c.log.Info("request refused", "code", code, "method", r.Method, "path", r.URL.Path, "fetch_site", r.Header.Get("Sec-Fetch-Site"))
	problem(w, status, code, detail)
}
