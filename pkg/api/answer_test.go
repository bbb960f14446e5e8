package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// fakeLinks signs links as "https://payloads.example/<key>?ttl=<ttl>",
// or fails with err.
type fakeLinks struct {
	err  error
	keys []string
	now  time.Time
}

func (l *fakeLinks) ResultLink(_ context.Context, key string, ttl time.Duration) (string, time.Time, error) {
	l.keys = append(l.keys, key)
	if l.err != nil {
		return "", time.Time{}, l.err
	}
	return "https://payloads.example/" + key + "?ttl=" + ttl.String(), l.now.Add(ttl), nil
}

// succeedByRef ends id's attempt with its answer in the payload store.
func (e *env) succeedByRef(t *testing.T, id string, ref job.Payload) {
	t.Helper()
	ctx, now := context.Background(), e.clock.Now()
	if _, err := e.store.Claim(ctx, job.Claim{ID: id, Owner: "w1", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Succeed(ctx, job.Succeed{ID: id, Owner: "w1", Now: now, Settlement: job.Settlement{Cost: 7},
		ResultRef: &ref, Model: "fake-1", ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

var bigRef = job.Payload{Key: "results/j/w1", Size: 1 << 20, SHA256: "sha256:" + strings.Repeat("ab", 32)}

// TestAPollLinksALargeAnswer: a small answer is inline, with no link; a
// large one is a link of wire.ResultLinkTTL to its key, with its size and
// digest, and no inline result.
func TestAPollLinksALargeAnswer(t *testing.T) {
	e := newEnv(t)
	links := &fakeLinks{now: t0}
	e.h.links = links
	small := e.mustCreate(t, "small")
	e.succeed(t, small)
	v := decodeView(t, e.do(t, request(t, "GET", "/jobs/"+small, "")))
	if string(v.Result) != doneResult || v.ResultURL != "" || v.ResultExpiresAt != nil || v.ResultBytes != 0 || v.ResultHash != "" || len(links.keys) != 0 {
		t.Fatalf("small answer: %+v, %d links signed; want it inline and no link", v, len(links.keys))
	}

	large := e.mustCreate(t, "large")
	e.succeedByRef(t, large, bigRef)
	resp := e.do(t, request(t, "GET", "/jobs/"+large, ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	v = decodeView(t, resp)
	if (len(v.Result) > 0 && string(v.Result) != "null") || v.ResultURL != "https://payloads.example/results/j/w1?ttl=15m0s" || v.ResultBytes != 1<<20 || v.ResultHash != bigRef.SHA256 {
		t.Fatalf("large answer: %+v; want a 15-minute link with its size and hash, no inline result", v)
	}
	if v.ResultExpiresAt == nil || !v.ResultExpiresAt.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("result_expires_at = %v, want the link's expiry", v.ResultExpiresAt)
	}
	if !strings.Contains(resp.Body, `"result":null`) {
		t.Errorf("body: %s, want result null beside the link", resp.Body)
	}
}

// TestALinkThatCannotBeSignedIs503: the payload store cannot sign the
// link (or the API has none): the poll is a 503 problem with
// Retry-After, never a view without its answer.
func TestALinkThatCannotBeSignedIs503(t *testing.T) {
	for _, c := range []struct {
		name  string
		links ResultLinks
	}{
		{"the signer fails", &fakeLinks{err: &job.Error{Code: job.CodeUnavailable, Message: "the payload store is unavailable", Err: errors.New("s3: presign get: boom")}}},
		{"no signer configured", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.h.links = c.links
			id := e.mustCreate(t, "k")
			e.succeedByRef(t, id, bigRef)
			resp := e.do(t, request(t, "GET", "/jobs/"+id, ""))
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Headers["Retry-After"] == "" {
				t.Fatalf("status %d %v: %s, want 503 with Retry-After", resp.StatusCode, resp.Headers, resp.Body)
			}
			if p := decodeProblem(t, resp); p.Code != wire.CodeUnavailable {
				t.Fatalf("problem %+v, want unavailable", p)
			}
		})
	}
}
