package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// staleOwner: after B takes over A's expired lease, nothing A writes lands,
// and B's writes do.
func staleOwner(t *testing.T, s *suite) {
	ctx := t.Context()
	now := base.Add(time.Minute)
	j := s.create(t)
	a := s.claim(t, j.ID, "a", now)
	b := s.claim(t, j.ID, "b", a.LeaseUntil) // lease_until <= now: expired
	want := a
	want.LeaseOwner, want.LeaseUntil, want.Attempts = "b", a.LeaseUntil.Add(time.Minute), 2
	want.Held = 2 * j.Reserve // a's unsettled hold stays beside b's
	want.Version, want.UpdatedAt = a.Version+1, a.LeaseUntil
	same(t, "takeover", b, want)

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

	done, err := s.store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "b", Now: later.Add(time.Second), Cost: 3, Held: j.Reserve,
		Result: json.RawMessage(`{"output":"b"}`), Model: "gpt-b", ExpiresAt: keep})
	want = hb
	want.State, want.Result, want.ResultModel, want.Progress, want.Cost, want.ExpiresAt = job.Succeeded, json.RawMessage(`{"output":"b"}`), "gpt-b", 1, 3, keep
	want.Held = j.Reserve // a's hold, until a settles
	want.LeaseOwner, want.LeaseUntil, want.Version, want.UpdatedAt = "", time.Time{}, hb.Version+1, later.Add(time.Second)
	s.applied(t, "b's success", done, err, want)

	_, err = s.store.Release(ctx, job.Release{ID: j.ID, Owner: "a", Now: later.Add(2 * time.Second), Class: job.Timeout})
	s.refused(t, "a's release after b's success", err, done)
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
