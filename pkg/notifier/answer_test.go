package notifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/wire"
)

// links signs "https://payloads.example/<key>?n=<signature count>".
type links struct {
	n    atomic.Int32
	fail bool
}

func (l *links) ResultLink(_ context.Context, key string, ttl time.Duration) (string, time.Time, error) {
	if l.fail {
		return "", time.Time{}, &job.Error{Code: job.CodeUnavailable, Err: errors.New("s3: presign get: boom")}
	}
	n := l.n.Add(1)
	return "https://payloads.example/" + key + "?n=" + strconv.Itoa(int(n)), t0.Add(ttl), nil
}

// linkedJob stores a succeeded job whose answer is in the payload store.
func (f *fixture) linkedJob(t *testing.T, url string) job.Job {
	t.Helper()
	j := job.Job{ID: job.NewID("tenant", "large"), Tenant: "tenant", RequestKey: "large", InputHash: "sha256:large", Model: "default",
		State: job.Succeeded, MaxAttempts: 3, Budget: job.Cents(5), Deadline: t0.Add(time.Hour), Version: 5,
		CreatedAt: t0.Add(-time.Minute), UpdatedAt: t0.Add(-time.Second), Callback: job.Callback{URL: url},
		ResultRef: &job.Payload{Key: "results/j/w1", Size: 1 << 20, SHA256: "sha256:ab"}}
	if _, err := f.store.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestAnEventCarriesALargeAnswerByLink: the event's view links the
// answer (15 minutes, its size and hash), never its body, and a retried
// delivery signs a fresh link.
func TestAnEventCarriesALargeAnswerByLink(t *testing.T) {
	l := &links{}
	f := newFixture(t, func(c *notifier.Config) { c.ResultLinks = l })
	r := newReceiver(t, f.key())
	r.answer = func(n int) (int, http.Header, time.Duration) {
		if n == 0 {
			return http.StatusInternalServerError, nil, 0
		}
		return http.StatusNoContent, nil, 0
	}
	j := f.linkedJob(t, r.srv.URL)
	deliver(t, f, message(j.ID, 5, job.Succeeded, 1))
	deliver(t, f, message(j.ID, 5, job.Succeeded, 2))
	got := r.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want the failed one and its retry", len(got))
	}
	for i, d := range got {
		var ev wire.WebhookEvent
		if err := json.Unmarshal(d.body, &ev); err != nil || d.verified != nil {
			t.Fatalf("delivery %d: %v %v", i, err, d.verified)
		}
		want := "https://payloads.example/results/j/w1?n=" + strconv.Itoa(i+1)
		if ev.Data.Result != nil || ev.Data.ResultURL != want || ev.Data.ResultBytes != 1<<20 || ev.Data.ResultHash != "sha256:ab" ||
			ev.Data.ResultExpiresAt == nil || !ev.Data.ResultExpiresAt.Equal(t0.Add(wire.ResultLinkTTL)) {
			t.Fatalf("delivery %d: %+v; want the answer by a fresh link %s", i, ev.Data, want)
		}
	}
}

// TestAnEventWhoseLinkCannotBeSignedIsRetried: no event goes out without
// its answer: the delivery fails and is retried on the schedule.
func TestAnEventWhoseLinkCannotBeSignedIsRetried(t *testing.T) {
	for _, c := range []struct {
		name  string
		links notifier.ResultLinks
	}{
		{"the signer fails", &links{fail: true}},
		{"no signer configured", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(cfg *notifier.Config) { cfg.ResultLinks = c.links })
			r := newReceiver(t, f.key())
			j := f.linkedJob(t, r.srv.URL)
			m := message(j.ID, 5, job.Succeeded, 1)
			if resp := deliver(t, f, m); len(resp.BatchItemFailures) != 1 || f.queue.hidden[m.ReceiptHandle] == 0 {
				t.Fatalf("failures %v, hidden %v: want the notice kept for a retry", resp.BatchItemFailures, f.queue.hidden)
			}
			if n := len(r.deliveries()); n != 0 {
				t.Fatalf("%d deliveries without the answer's link", n)
			}
		})
	}
}
