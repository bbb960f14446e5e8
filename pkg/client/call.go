package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxAnswer bounds an answer's body: API Gateway's own response limit.
const maxAnswer = 10 << 20

// request is one API call, re-sent as is by every retry.
type request struct {
	method string
	path   string // escaped, relative to the base: "/jobs/job_..."
	query  url.Values
	header http.Header
	body   []byte // nil for none
}

// answer is a response read to the end.
type answer struct {
	status     int
	header     http.Header
	body       []byte
	retryAfter time.Duration
}

// call sends r until it gets one of the expected statuses, a final error,
// or runs out of retries. Network errors, 429 and 5xx are retried after the
// answer's Retry-After (or an exponential backoff), capped by MaxRetryWait;
// anything else unexpected is returned at once as an *Error.
func (c *Client) call(ctx context.Context, r request, expect ...int) (answer, error) {
	for try := 1; ; try++ {
		a, err := c.send(ctx, r)
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return answer{}, fmt.Errorf("aijobs API: %s %s: %w", r.method, r.path, ctx.Err())
		case err != nil:
			var ne *netError
			if !errors.As(err, &ne) {
				return answer{}, err // not the network's fault: a retry would fail the same way
			}
			if try > c.maxRetries {
				return answer{}, &NetworkError{Method: r.method, Path: r.path, Tries: try, Err: ne.err}
			}
			wait = c.backoff(try)
		case slices.Contains(expect, a.status):
			return a, nil
		default:
			e := errorFrom(a.status, a.header, a.body, a.retryAfter)
			if !e.Temporary() || try > c.maxRetries {
				return answer{}, e
			}
			wait = c.backoff(try)
			if e.RetryAfter > 0 {
				wait = e.RetryAfter
			}
		}
		if err := c.sleep(ctx, min(wait, c.maxRetryWait)); err != nil {
			return answer{}, fmt.Errorf("aijobs API: %s %s: stopped waiting to retry: %w", r.method, r.path, err)
		}
	}
}

// backoff is the wait before retry number try when the answer names none:
// RetryBase doubled per retry.
func (c *Client) backoff(try int) time.Duration {
	d := c.retryBase
	for i := 1; i < try && d < c.maxRetryWait; i++ {
		d *= 2
	}
	return d
}

// netError marks a failure to get an answer, which a retry may fix.
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }

// send makes one try: a fresh request (so a signature is fresh), bounded by
// AttemptTimeout, read to the end.
func (c *Client) send(ctx context.Context, r request) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return answer{}, fmt.Errorf("aijobs API: build %s %s: %w", r.method, r.path, err)
	}
	for k, vs := range r.header {
		req.Header[k] = slices.Clone(vs)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json, application/problem+json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != nil {
		if err := c.auth.Authorize(ctx, req, r.body, c.now()); err != nil {
			return answer{}, fmt.Errorf("aijobs API: %s %s: authorize: %w", r.method, r.path, err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, &netError{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return answer{}, &netError{err: fmt.Errorf("read the answer: %w", err)}
	}
	if len(b) > maxAnswer {
		return answer{}, fmt.Errorf("aijobs API: %s %s: the answer is larger than %d bytes", r.method, r.path, maxAnswer)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b,
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now())}, nil
}

// parseRetryAfter reads delay-seconds or an HTTP-date (RFC 9110 10.2.3);
// 0 when absent, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// jobPath is the escaped path of a job; an id never needs escaping, so an
// escaped one is refused by the server as malformed, never misrouted.
func jobPath(id string) (string, error) {
	if id == "" {
		return "", errors.New("aijobs API: a job id is required")
	}
	return "/jobs/" + url.PathEscape(id), nil
}
