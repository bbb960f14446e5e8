package storetest

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// spendFirst: a claim records its worker's promise to hold spend first
// (job.Job.SpendFirst), or removes an earlier attempt's; a heartbeat
// keeps it; and a void
// write-off (the attempt provably never called) returns the hold instead
// of charging it (docs/spend.md, "Crash windows").
func spendFirst(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	promise := job.SpendFirstOf("d", now, "w1")
	t.Run("claim and heartbeat", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, func(j *job.Job) { j.SpendFirst = "older@1" })
		got, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "w1", Now: now, LeaseUntil: now.Add(time.Minute), SpendFirst: promise})
		if err != nil || got.SpendFirst != promise {
			t.Fatalf("claim: SpendFirst %q, %v; want %q", got.SpendFirst, err, promise)
		}
		at := now.Add(time.Second)
		got, err = s.store.Heartbeat(t.Context(), job.Heartbeat{ID: j.ID, Owner: "w1", Now: at, LeaseUntil: at.Add(time.Minute)})
		if err != nil || got.SpendFirst != promise || s.get(t, j.ID).SpendFirst != promise {
			t.Fatalf("heartbeat: SpendFirst %q, %v; want %q kept", got.SpendFirst, err, promise)
		}
	})
	t.Run("a claim without a promise removes one", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, func(j *job.Job) { j.SpendFirst = promise })
		got, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "w1", Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil || got.SpendFirst != "" || s.get(t, j.ID).SpendFirst != "" {
			t.Fatalf("claim: SpendFirst %q, %v; want none", got.SpendFirst, err)
		}
	})
	t.Run("a void write-off returns the hold", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, func(j *job.Job) { running("old", now)(j); j.Cost, j.SpendFirst = 7, promise })
		w := job.NewWriteOff(j, now)
		w.Void = true
		got, err := s.store.WriteOff(t.Context(), w)
		want := j
		want.Held, want.WrittenOff = 0, []string{"old"}
		want.LeaseOwner, want.LeaseUntil = "", time.Time{}
		want.State, want.ErrorClass, want.ErrorDetail = job.Queued, job.Timeout, job.VoidDetail
		want.Version, want.UpdatedAt = j.Version+1, now
		s.applied(t, "void write-off", got, err, want)
		if got.Remaining() != j.Remaining()+j.Held || j.Held == 0 {
			t.Errorf("remaining %d, want %d: the hold of a call never made goes back to the budget", got.Remaining(), j.Remaining()+j.Held)
		}
	})
}
