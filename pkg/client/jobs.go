package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/wire"
)

// Submit creates a job (POST /jobs) under the idempotency key. It answers
// the job's view and whether the call was a repeat: an earlier create with
// the same key and body made the job (200 Idempotent-Replayed), not this one
// (202). The same key with another body is an *Error with Code
// idempotency_key_reused (422). Retries re-send the same key and body, so
// they never create a second job; a 503 enqueue_failed is retried after
// its Retry-After, which re-sends the job's message.
//
// A body larger than the API takes (MaxBodyBytes) has its input sent
// through an upload first (Upload) and is created naming it: the same
// input inline or uploaded is the same input to the API, so a retry of
// the whole call is still a repeat.
//
// repeated is the server's word: after this call's own first try recorded
// the job and got no usable answer (a 503 enqueue_failed, a lost answer),
// the retry that finds it is answered as a repeat too. Neither side can
// tell that from a job created by an earlier call with the same key.
func (c *Client) Submit(ctx context.Context, key string, req CreateBody) (View, bool, error) {
	if !wire.ValidKey(key) {
		return View{}, false, fmt.Errorf("aijobs API: the idempotency key must be 1 to %d printable ASCII characters", wire.MaxKeyLength)
	}
	body, err := c.viaUpload(ctx, req)
	if err != nil {
		return View{}, false, err
	}
	a, err := c.call(ctx, request{
		method: http.MethodPost, path: "/jobs", body: body,
		header: http.Header{"Idempotency-Key": {key}},
	}, http.StatusAccepted, http.StatusOK)
	if err != nil {
		return View{}, false, err
	}
	v, err := decodeView(a)
	if err != nil {
		return View{}, false, err
	}
	repeated := a.status == http.StatusOK && a.header.Get("Idempotent-Replayed") == "true"
	return v, repeated, nil
}

// Snapshot is one answer of GET /jobs/{id}.
type Snapshot struct {
	// View is the job; zero when NotModified.
	View View
	// NotModified is true on a 304: the job is still at the ETag given.
	NotModified bool
	// ETag is the job's entity tag (its quoted version); send it back to
	// be answered 304 while nothing changed.
	ETag string
	// RetryAfter is how long the server asks pollers to wait, 0 once the
	// job is terminal.
	RetryAfter time.Duration
}

// get is GET /jobs/{id} as the API answers it (Get says how).
func (c *Client) get(ctx context.Context, id, etag string) (Snapshot, error) {
	path, err := jobPath(id)
	if err != nil {
		return Snapshot{}, err
	}
	r := request{method: http.MethodGet, path: path}
	if etag != "" {
		r.header = http.Header{"If-None-Match": {etag}}
	}
	a, err := c.call(ctx, r, http.StatusOK, http.StatusNotModified)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{ETag: a.header.Get("ETag"), RetryAfter: a.retryAfter}
	if a.status == http.StatusNotModified {
		s.NotModified = true
		if s.ETag == "" {
			s.ETag = etag
		}
		return s, nil
	}
	if s.View, err = decodeView(a); err != nil {
		return Snapshot{}, err
	}
	if s.ETag == "" {
		s.ETag = `"` + strconv.FormatInt(s.View.Version, 10) + `"`
	}
	return s, nil
}

// Cancel abandons a job (POST /jobs/{id}/cancel) and answers its view, now
// abandoned with class cancelled; a running attempt stops at its next
// heartbeat. A job already cancelled answers its view again, so retrying
// is safe; a succeeded or failed job is an *Error with Code
// already_finished (409).
func (c *Client) Cancel(ctx context.Context, id string) (View, error) {
	path, err := jobPath(id)
	if err != nil {
		return View{}, err
	}
	a, err := c.call(ctx, request{method: http.MethodPost, path: path + "/cancel"}, http.StatusOK)
	if err != nil {
		return View{}, err
	}
	return decodeView(a)
}

func decodeView(a answer) (View, error) {
	var v View
	if err := json.Unmarshal(a.body, &v); err != nil {
		return View{}, fmt.Errorf("aijobs API: decode the job view (status %d): %w", a.status, err)
	}
	if v.ID == "" {
		return View{}, errors.New("aijobs API: the answer holds no job view")
	}
	return v, nil
}
