package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// staleOwner: after A's lease ran out, A's attempt is written off and B
// claims; nothing A writes lands but its cost, and B's writes do.
func staleOwner(t *testing.T, s *suite) {
	ctx := t.Context()
	now := base.Add(time.Minute)
	j := s.create(t)
	a := s.claim(t, j.ID, "a", now)
	if _, err := s.store.WriteOff(ctx, job.NewWriteOff(a, a.LeaseUntil)); err != nil { // lease_until <= now: expired
		t.Fatal(err)
	}
	b := s.claim(t, j.ID, "b", a.LeaseUntil)
	want := a
	want.LeaseOwner, want.LeaseUntil, want.Attempts = "b", a.LeaseUntil.Add(time.Minute), 2
	want.ErrorClass, want.ErrorDetail = job.Timeout, job.WriteOffDetail
	want.Cost, want.CostEstimated, want.WrittenOff = j.Reserve, true, []string{"a"} // a's hold, charged
	want.Held = j.Reserve                                                           // b's
	want.Version, want.UpdatedAt = a.Version+2, a.LeaseUntil.Add(time.Millisecond)
	same(t, "claim after the write-off", b, want)

	later := b.UpdatedAt.Add(time.Second) // b's lease is live
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"heartbeat", func() error {
			_, err := s.store.Heartbeat(ctx, job.Heartbeat{ID: j.ID, Owner: "a", Now: later, LeaseUntil: later.Add(time.Hour), Progress: 0.9})
			return err
		}},
		{"succeed", func() error {
			_, err := s.store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "a", Now: later, Result: json.RawMessage(`{"stale":true}`), Model: "m", ExpiresAt: keep})
			return err
		}},
		{"release", func() error {
			_, err := s.store.Release(ctx, job.Release{ID: j.ID, Owner: "a", Now: later, Class: job.Timeout, Detail: "stale"})
			return err
		}},
		{"end as failed", func() error {
			_, err := s.store.End(ctx, job.End{ID: j.ID, Owner: "a", Now: later, Class: job.Auth, ExpiresAt: keep})
			return err
		}},
		{"end as abandoned", func() error {
			_, err := s.store.End(ctx, job.End{ID: j.ID, Owner: "a", Now: later, Class: job.DeadlineExceeded, ExpiresAt: keep})
			return err
		}},
		{"end with no owner while b's lease is live", func() error {
			_, err := s.store.End(ctx, job.End{ID: j.ID, Now: later, Class: job.Timeout, ExpiresAt: keep})
			return err
		}},
	} {
		s.refused(t, "a's "+c.name, c.call(), b)
	}

	hb, err := s.store.Heartbeat(ctx, job.Heartbeat{ID: j.ID, Owner: "b", Now: later, LeaseUntil: later.Add(time.Hour), Progress: 0.5})
	want = b
	want.LeaseUntil, want.Progress, want.Version, want.UpdatedAt = later.Add(time.Hour), 0.5, b.Version+1, later
	s.applied(t, "b's heartbeat", hb, err, want)

	done, err := s.store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "b", Now: later.Add(time.Second), Settlement: job.Settlement{Cost: 3, Held: j.Reserve},
		Result: json.RawMessage(`{"output":"b"}`), Model: "gpt-b", ExpiresAt: keep})
	want = hb
	want.State, want.Result, want.ResultModel, want.Progress, want.ExpiresAt = job.Succeeded, json.RawMessage(`{"output":"b"}`), "gpt-b", 1, keep
	want.Cost, want.Held, want.ErrorClass, want.ErrorDetail = j.Reserve+3, 0, "", ""
	want.LeaseOwner, want.LeaseUntil, want.Version, want.UpdatedAt = "", time.Time{}, hb.Version+1, later.Add(time.Second)
	s.applied(t, "b's success", done, err, want)

	// a was cut off, not dead: its settlement replaces the estimate its
	// hold became (cost 1 instead of the reserve), and nothing else.
	_, err = s.store.Release(ctx, job.Release{ID: j.ID, Owner: "a", Now: later.Add(2 * time.Second), Settlement: job.Settlement{Cost: 1, Held: j.Reserve, Ran: time.Second}, Class: job.Timeout})
	want = done
	want.Cost, want.RunTime = 4, time.Second
	want.Version, want.UpdatedAt = done.Version+1, later.Add(2*time.Second)
	s.refused(t, "a's release after b's success", err, want)
}

// emptyOwner: an empty owner is nobody; it holds no lease, even on a record
// whose lease names nobody.
func emptyOwner(t *testing.T, s *suite) {
	ctx := t.Context()
	now := base.Add(time.Minute)
	created := s.create(t, running("", now.Add(time.Hour)))
	claimed := s.create(t)
	claimed = s.claim(t, claimed.ID, "", now)
	for name, j := range map[string]job.Job{"created with no owner": created, "claimed with no owner": claimed} {
		_, err := s.store.Heartbeat(ctx, job.Heartbeat{ID: j.ID, Now: now.Add(time.Second), LeaseUntil: now.Add(2 * time.Hour)})
		s.refused(t, name+": heartbeat", err, j)
		_, err = s.store.Succeed(ctx, job.Succeed{ID: j.ID, Now: now.Add(time.Second), Result: json.RawMessage(`{}`), ExpiresAt: keep})
		s.refused(t, name+": succeed", err, j)
		_, err = s.store.Release(ctx, job.Release{ID: j.ID, Now: now.Add(time.Second), Class: job.Timeout})
		s.refused(t, name+": release", err, j)
	}
}
