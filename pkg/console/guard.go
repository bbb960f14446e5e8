package console

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// DefaultAddr is where the console listens unless told otherwise.
const DefaultAddr = "127.0.0.1:9090"

// Listen opens addr for the console. A host that is not a loopback
// address is refused unless allowRemote: the console acts with the
// operator's AWS credentials, so by default only this machine reaches it.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("console address %q: want host:port", addr)
	}
	if !allowRemote && !loopbackIP(host) {
		return nil, fmt.Errorf("console address %q is not loopback: it would serve your AWS credentials' powers to the network (allow it explicitly to do so)", addr)
	}
	return net.Listen("tcp", addr)
}

// loopbackIP reports whether host is a loopback IP or localhost.
func loopbackIP(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine: a page
// on another site that resolves its own name to 127.0.0.1 (DNS
// rebinding) sends its own name, and is refused.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return loopbackIP(host)
}

// guarded refuses a state-changing request that does not carry the
// process's CSRF token, or that a browser says came from another origin.
func (c *Console) guarded(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
		if err := r.ParseForm(); err != nil {
			problem(w, http.StatusBadRequest, "invalid_request", "the form could not be read")
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				problem(w, http.StatusForbidden, "csrf_refused", "the request came from another origin")
				return
			}
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(c.cfg.Token)) != 1 {
			problem(w, http.StatusForbidden, "csrf_refused", "the form's CSRF token is missing or not this console's: reload the page")
			return
		}
		next(w, r)
	}
}

// problem answers an RFC 9457 problem with a stable code; never an
// error's text.
func problem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}{"about:blank", http.StatusText(status), status, code, detail})
}
