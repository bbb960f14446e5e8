package finish_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
)

// A parked outcome is read back by a later release of the code: the JSON
// of an outcome keeps the keys the lot has always held.
func TestAnOutcomeIsParkedUnderItsTransitionsName(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	f := finish.Of{Job: job.Job{ID: "j1"}, Owner: "w1", Now: now, Settlement: job.Settlement{Cost: 7, Held: 9},
		Retention: job.Retention{Succeeded: time.Hour, Failed: 2 * time.Hour}}
	for key, o := range map[string]finish.Outcome{
		`"succeed":`:  f.Succeed(json.RawMessage(`{"output":"hi"}`), "p/m", job.Standard),
		`"release":`:  f.Release(job.ProviderError, "d", now.Add(time.Minute)),
		`"end":`:      f.End(job.ContentFiltered, "d"),
		`"release":{`: f.HandBack(job.Timeout, "d"),
	} {
		b, err := json.Marshal(o)
		if err != nil || !strings.HasPrefix(string(b), "{"+key) {
			t.Fatalf("parked as %s (%v), want a single %s", b, err, key)
		}
		var back finish.Outcome
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if id, owner := back.IDs(); id != "j1" || owner != "w1" {
			t.Errorf("read back %s as %s/%s, want j1/w1", b, id, owner)
		}
	}
}

// A finished record is kept as its retention says: a success for
// Succeeded, any end for Failed.
func TestAFinishExpiresAsItsRetentionSays(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	f := finish.Of{Job: job.Job{ID: "j1"}, Owner: "w1", Now: now, Settlement: job.Settlement{Cost: 7},
		Retention: job.Retention{Succeeded: time.Hour, Failed: 2 * time.Hour}}
	for _, class := range []job.ErrorClass{job.ContentFiltered, job.DeadlineExceeded} {
		if got := f.End(class, "").End; !got.ExpiresAt.Equal(now.Add(2*time.Hour)) || got.Class != class || got.Settlement != f.Settlement {
			t.Errorf("end %+v, want it kept two hours", got)
		}
	}
	if got := f.Succeed(nil, "p/m", job.Batch).Succeed; !got.ExpiresAt.Equal(now.Add(time.Hour)) || got.Lane != job.Batch || got.Settlement != f.Settlement {
		t.Errorf("success %+v, want it kept an hour", got)
	}
}

type kept struct{ qs []job.Quarantine }

func (k *kept) Quarantine(_ context.Context, q job.Quarantine) error {
	k.qs = append(k.qs, q)
	return nil
}

type counts map[string]int

func (c counts) Emit(metric string, v float64, _ string, dims map[string]string) {
	c[metric+"/"+dims["ErrorClass"]] += int(v)
}

// What follows an end: a deterministic class quarantines the input and
// counts a failure; a class the owner's limits caused counts an
// abandonment and quarantines nothing; with nothing wired, nothing
// happens.
func TestAnEndIsFollowedByItsQuarantineAndItsCount(t *testing.T) {
	now, log := time.Now(), slog.New(slog.DiscardHandler)
	j := job.Job{ID: "j1", Tenant: "t1", Model: "default", InputHash: "sha256:x"}
	q, c := &kept{}, counts{}
	r := finish.AfterEnd{Quarantine: q, QuarantineFor: time.Hour, Metrics: c}
	r.Ended(t.Context(), j, job.ContentFiltered, now, log)
	r.Ended(t.Context(), j, job.DeadlineExceeded, now, log)
	if len(q.qs) != 1 || q.qs[0].JobID != "j1" || q.qs[0].Class != job.ContentFiltered || q.qs[0].Until.Sub(q.qs[0].At) != time.Hour {
		t.Errorf("quarantined %+v, want only the content_filtered input, for an hour", q.qs)
	}
	if c["JobsFailed/content_filtered"] != 1 || c["JobsAbandoned/deadline_exceeded"] != 1 || len(c) != 2 {
		t.Errorf("counted %v", c)
	}
	finish.AfterEnd{}.Ended(t.Context(), j, job.ContentFiltered, now, log) // nothing wired: no panic
}

// The batch lane's hand-back is a release apart from a failed item's
// under the same owner (its own Kind), claimable at once, carrying the
// settlement.
func TestAHandBackIsAReleaseOfItsOwnKind(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	f := finish.Of{Job: job.Job{ID: "j1"}, Owner: "batch#b1", Now: now, Settlement: job.Settlement{Held: 9}}
	h, r := f.HandBack(job.Timeout, "no batch in time").Release, f.Release(job.Timeout, "no batch in time", time.Time{}).Release
	if h == nil || !h.HandBack || h.Kind() == r.Kind() || !h.NotBefore.IsZero() || h.Settlement != f.Settlement || h.Class != job.Timeout || h.ID != "j1" || h.Owner != "batch#b1" || !h.Now.Equal(now) {
		t.Errorf("hand-back %+v, want a release of its own kind, at once, settling %+v", h, f.Settlement)
	}
}
