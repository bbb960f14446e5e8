package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
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
// cookie from the other port's page. A browser that --open starts gets a
// one-time code instead of the token (OpenURL). docs/cli.md, "console",
// has the operator's side.

// tokenParam is the query parameter of the URL the console prints.
const tokenParam = "token"

// codeParam is the query parameter of the URL --open hands the browser
// (OpenURL): a one-time code, which its first visit trades for the
// cookie as the token's does.
const codeParam = "code"

// codeLife is how long a one-time code may be redeemed: the time a
// browser takes to start and load its first page.
const codeLife = time.Minute

// openCodes are the one-time codes OpenURL minted, by code, with when
// each expires.
type openCodes struct {
	mu   sync.Mutex
	live map[string]time.Time
}

// OpenURL is the URL to hand a browser opener: base with a fresh
// one-time code, never the access token. The opener's command line is
// readable by every local user (ps, /proc/<pid>/cmdline) while it runs;
// the code works once and for codeLife only, and tells nothing of the
// token. A local user who redeems it before the browser does gets the
// session, but the browser is then refused (code_refused): the operator
// sees it, and stops the console.
func (c *Console) OpenURL(base string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	code := hex.EncodeToString(b)
	now := c.cfg.Clock.Now()
	c.codes.mu.Lock()
	defer c.codes.mu.Unlock()
	for k, until := range c.codes.live {
		if !now.Before(until) {
			delete(c.codes.live, k)
		}
	}
	c.codes.live[code] = now.Add(codeLife)
	return strings.TrimSuffix(base, "/") + "/?" + codeParam + "=" + code, nil
}

// redeem reports whether code is a live one-time code, and spends it.
func (c *Console) redeem(code string) bool {
	now := c.cfg.Clock.Now()
	c.codes.mu.Lock()
	defer c.codes.mu.Unlock()
	until, ok := c.codes.live[code]
	delete(c.codes.live, code)
	return ok && now.Before(until)
}

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
		c.enter(w, r)
		return false
	}
	if given := r.URL.Query().Get(codeParam); given != "" {
		if !c.redeem(given) {
			c.refused(w, r, http.StatusUnauthorized, "code_refused", "this one-time code was used already, has expired or was never given: open the URL `aijobs console` printed when it started")
			return false
		}
		c.enter(w, r)
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

// enter sets the cookie and redirects to the page asked for without the
// token or code, so it leaves the address bar and the history.
func (c *Console) enter(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: c.cfg.Access, Path: "/", HttpOnly: true,
		Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del(tokenParam)
	q.Del(codeParam)
	to := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
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
