package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/wire"
)

// Error is an answer of the API that is not a success: a problem+json body
// (RFC 9457 with the API's stable code), or any other error status (API
// Gateway answers some itself: 403 for a bad signature, 429 when it
// throttles, 504 when the function times out; those have no Code). Branch
// on Code, never on Title or Detail. Match it with errors.As.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the problem's stable code (docs/errors.md), "" when the
	// answer was not a problem.
	Code string
	// Type is the problem's type URI, where the code is documented.
	Type   string
	Title  string
	Detail string
	// Field names the offending request field or header, when one is.
	Field string
	// RetryAfter is the answer's Retry-After, 0 when absent.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aijobs API: %d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	} else if e.Title != "" {
		b.WriteString(": " + e.Title)
	}
	if e.Field != "" {
		b.WriteString(" (field " + e.Field + ")")
	}
	return b.String()
}

// Temporary reports whether the same request may succeed soon: 429 and
// every 5xx. These are the answers the client retries itself. A 429
// spend_limit is not: its Retry-After is the end of the tenant's day or
// month (docs/spend.md), for the caller to decide on.
func (e *Error) Temporary() bool {
	return (e.Status == http.StatusTooManyRequests && e.Code != "spend_limit") || e.Status >= 500
}

// NetworkError is a request that got no HTTP answer at all (refused,
// reset, timed out, TLS failure) after every try the client made.
type NetworkError struct {
	// Method and Path are the request's ("POST", "/jobs").
	Method, Path string
	// Tries is how many times the request was sent.
	Tries int
	Err   error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("aijobs API: %s %s: no answer after %d tries: %v", e.Method, e.Path, e.Tries, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

// maxDetail bounds what a non-problem body may contribute to an Error: an
// HTML error page is not a detail.
const maxDetail = 200

// problemBody is the JSON of a problem (wire.Problem), and of
// API Gateway's own errors ({"message": "Forbidden"}).
type problemBody struct {
	wire.Problem
	Message string `json:"message"`
}

// errorFrom builds the Error of an answer with status >= 400 (or any status
// the caller did not expect), decoding the body when it is JSON.
func errorFrom(status int, h http.Header, body []byte, retryAfter time.Duration) *Error {
	e := &Error{Status: status, Title: http.StatusText(status), RetryAfter: retryAfter}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mt != "application/problem+json" && mt != "application/json" {
		return e
	}
	var p problemBody
	if json.Unmarshal(body, &p) != nil {
		return e
	}
	if p.Code != "" || mt == "application/problem+json" {
		e.Code, e.Type, e.Detail, e.Field = string(p.Code), p.Type, p.Detail, p.Field
		if p.Title != "" {
			e.Title = p.Title
		}
		return e
	}
	if p.Message != "" {
		e.Detail = clipped(p.Message)
	}
	return e
}

// clipped is s cut to maxDetail bytes, and on a rune boundary, so that a
// gateway's message never makes a long or broken detail.
func clipped(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	return strings.ToValidUTF8(s[:maxDetail], "") + "..."
}
