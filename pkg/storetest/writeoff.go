package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// writeOff: an attempt whose lease ran out is written off, its hold
// charged as an estimate; only on the record it was decided from.
func writeOff(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	writeOffApplied(t, s, now)
	writeOffRefused(t, s, now)
	writeOffRetried(t, s, now)
}

// writeOffApplied: a write-off lands on any record whose lease ran out,
// whatever it holds and however it got there, and on no other.
func writeOffApplied(t *testing.T, s *suite, now time.Time) {
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
		ok   bool
	}{
		{"running, lease_until is now", running("old", now), true},
		{"running, lease long expired, a backoff left over", func(j *job.Job) {
			running("old", now.Add(-time.Hour))(j)
			j.Cost, j.Attempts, j.NotBefore, j.Progress = 7, 2, now.Add(-2*time.Hour), 0.5
		}, true},
		{"running, a raised hold", func(j *job.Job) { running("old", now)(j); j.Held += 40 }, true},
		{"running, nothing held", func(j *job.Job) { running("old", now)(j); j.Held = 0 }, true},
		{"abandoned while the attempt ran", func(j *job.Job) {
			running("old", now)(j)
			j.State, j.ErrorClass, j.ExpiresAt = job.Abandoned, job.Cancelled, keep
		}, true},
		{"an earlier attempt written off", func(j *job.Job) {
			running("old", now)(j)
			j.Cost, j.CostEstimated, j.WrittenOff = reserve, true, []string{"older"}
		}, true},
		{"running, lease live one more millisecond", running("old", now.Add(time.Millisecond)), false},
		{"queued", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			w := job.NewWriteOff(j, now)
			w.Owner = "old" // the queued record names nobody
			got, err := s.store.WriteOff(t.Context(), w)
			if !c.ok {
				s.refused(t, "write-off", err, j)
				return
			}
			want := j
			want.Cost, want.Held, want.CostEstimated = j.Cost+j.Held, 0, j.CostEstimated || j.Held > 0
			want.WrittenOff = append(append([]string{}, j.WrittenOff...), "old")
			slices.Sort(want.WrittenOff)
			want.LeaseOwner, want.LeaseUntil = "", time.Time{}
			if j.State == job.Running {
				want.State, want.ErrorClass, want.ErrorDetail, want.NotBefore = job.Queued, job.Timeout, job.WriteOffDetail, time.Time{}
			}
			want.Version, want.UpdatedAt = j.Version+1, now
			s.applied(t, "write-off", got, err, want)
			if got.Remaining() != j.Remaining() {
				t.Errorf("remaining %d, want %d: a hold charged leaves the budget as it was", got.Remaining(), j.Remaining())
			}
		})
	}
}

// writeOffRefused: the write-off holds to the record it was decided from.
func writeOffRefused(t *testing.T, s *suite, now time.Time) {
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
		w    func(job.WriteOff) job.WriteOff
	}{
		{"another owner", running("old", now), func(w job.WriteOff) job.WriteOff { w.Owner = "other"; return w }},
		{"an older version", running("old", now), func(w job.WriteOff) job.WriteOff { w.Version--; return w }},
		{"a newer version", running("old", now), func(w job.WriteOff) job.WriteOff { w.Version++; return w }},
		{"nobody", running("", now), func(w job.WriteOff) job.WriteOff { return w }},
	} {
		t.Run("refused/"+c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			_, err := s.store.WriteOff(t.Context(), c.w(job.NewWriteOff(j, now)))
			s.refused(t, "write-off", err, j)
		})
	}
}

// writeOffRetried: a write-off whose answer was lost is recognised when
// retried: the second one is not applied again.
func writeOffRetried(t *testing.T, s *suite, now time.Time) {
	t.Run("retried after it landed", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, running("old", now))
		w := job.NewWriteOff(j, now)
		first, err := s.store.WriteOff(t.Context(), w)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.store.WriteOff(t.Context(), w)
		if err == nil {
			same(t, "retried write-off", again, first)
		} else if cur, ok := job.ConflictJob(err); !ok {
			t.Fatalf("retried write-off: %v", err)
		} else {
			same(t, "retried write-off (conflict record)", cur, first)
		}
		same(t, "stored", s.get(t, j.ID), first)
	})
}

// lateSettle: an attempt written off while its worker was only cut off
// settles when the worker gets through: its cost replaces the estimate its
// hold became, once, whatever happened to the job since.
func lateSettle(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name  string
		after func(t *testing.T, id string) // what happened once "old" was written off
	}{
		{"queued again", func(*testing.T, string) {}},
		{"claimed by the next worker", func(t *testing.T, id string) { s.claim(t, id, "next", now.Add(time.Second)) }},
		{"cancelled", func(t *testing.T, id string) {
			if _, err := s.store.Cancel(t.Context(), job.Cancel{ID: id, Tenant: tenant, Now: now.Add(time.Second), ExpiresAt: keep}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, f := range finishes(s) {
			t.Run(c.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				j := s.create(t, running("old", now), func(j *job.Job) { j.Cost = 1000 })
				if _, err := s.store.WriteOff(t.Context(), job.NewWriteOff(j, now)); err != nil {
					t.Fatal(err)
				}
				c.after(t, j.ID)
				before := s.get(t, j.ID)
				if before.Cost != 1000+reserve {
					t.Fatalf("cost %d after the write-off, want %d", before.Cost, 1000+reserve)
				}
				at := now.Add(2 * time.Second)
				_, err := f.call(t, j.ID, "old", at, paid{cost: 1, held: reserve, ran: ran})
				want := before
				want.Cost, want.RunTime = 1001, ran // the estimate (the reserve) replaced by 1
				want.Version, want.UpdatedAt = before.Version+1, at
				s.refused(t, "the late "+f.name, err, want)
			})
		}
	}
}

// cancelledAttempt: a job cancelled while an attempt ran keeps the
// attempt's lease and hold; the attempt's own (refused) finish settles
// and removes them, and if its worker died, its write-off does, so a
// finished job never keeps a hold.
func cancelledAttempt(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	cancelled := func(t *testing.T) job.Job {
		j := s.create(t, attempt(now))
		got, err := s.store.Cancel(t.Context(), job.Cancel{ID: j.ID, Tenant: tenant, Now: now, ExpiresAt: keep})
		if err != nil || got.LeaseOwner != "me" || got.Held != j.Held {
			t.Fatalf("cancel: %+v %v, want the attempt's lease and hold kept", got, err)
		}
		return got
	}
	for _, f := range finishes(s) {
		t.Run("settled by its own "+f.name, func(t *testing.T) {
			t.Parallel()
			j := cancelled(t)
			at := now.Add(time.Second)
			_, err := f.call(t, j.ID, "me", at, paid{cost: 6, held: reserve, ran: ran})
			want := j
			want.Cost, want.Held, want.RunTime = j.Cost+6, 0, j.RunTime+ran
			want.LeaseOwner, want.LeaseUntil = "", time.Time{}
			want.Version, want.UpdatedAt = j.Version+1, at
			s.refused(t, f.name, err, want)
		})
	}
	t.Run("written off after its worker died", func(t *testing.T) {
		t.Parallel()
		j := cancelled(t)
		at := j.LeaseUntil
		got, err := s.store.WriteOff(t.Context(), job.NewWriteOff(j, at))
		want := j
		want.Cost, want.Held, want.CostEstimated, want.WrittenOff = j.Cost+reserve, 0, true, []string{"me"}
		want.LeaseOwner, want.LeaseUntil = "", time.Time{}
		want.Version, want.UpdatedAt = j.Version+1, at
		s.applied(t, "write-off", got, err, want)
		// Its result never lands on a cancelled job.
		_, err = s.store.Succeed(t.Context(), job.Succeed{ID: j.ID, Owner: "me", Now: at.Add(time.Second), Result: json.RawMessage(`{}`), ExpiresAt: keep})
		s.refused(t, "succeed", err, want)
	})
}
