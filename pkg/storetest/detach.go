package storetest

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// detach: the attempt holding the job lets its recorded generation run on
// until its reattach is due; anyone else is refused.
func detach(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	due := now.Add(30 * time.Second)
	p := pending
	p.Owner, p.Since, p.Due = "me", now, due
	t.Run("by the owner", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		got, err := s.store.Detach(t.Context(), job.Detach{ID: j.ID, Owner: "me", Now: now, LeaseUntil: due.Add(time.Minute), Pending: p})
		want := j
		want.Pending, want.LeaseUntil = &p, due.Add(time.Minute)
		want.Version, want.UpdatedAt = j.Version+1, now
		s.applied(t, "detach", got, err, want)
		if !got.Detached() {
			t.Fatal("the detached record does not say so")
		}
	})
	t.Run("by another owner", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		_, err := s.store.Detach(t.Context(), job.Detach{ID: j.ID, Owner: "other", Now: now, LeaseUntil: due, Pending: p})
		s.refused(t, "detach by another owner", err, j)
	})
}

// reattach: a detached job whose reattach is due is taken by one new owner,
// its attempt uncounted and its hold kept; a reattach before it is due, of
// another owner's detachment, or a second one decided from the same record
// (a duplicate delivery), is refused.
func reattach(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	due := now.Add(30 * time.Second)
	p := pending
	p.Owner, p.Since, p.Due = "me", now, due
	detached := func(t *testing.T, muts ...func(*job.Job)) job.Job {
		muts = append([]func(*job.Job){attempt(now), func(j *job.Job) { j.Pending, j.LeaseUntil = &p, due.Add(time.Minute) }}, muts...)
		return s.create(t, muts...)
	}
	reattached := func(j job.Job, at time.Time) job.Job {
		q := p
		q.Owner, q.Due = "next", time.Time{}
		j.Pending, j.LeaseOwner, j.LeaseUntil = &q, "next", at.Add(time.Minute)
		j.Version, j.UpdatedAt = j.Version+1, at
		return j
	}
	t.Run("once, when due", func(t *testing.T) {
		t.Parallel()
		j := detached(t)
		at := due.Add(time.Second)
		got, err := s.store.Reattach(t.Context(), job.NewReattach(j, "next", at, at.Add(time.Minute)))
		want := reattached(j, at)
		s.applied(t, "reattach", got, err, want)
		_, err = s.store.Reattach(t.Context(), job.NewReattach(j, "dup", at.Add(time.Second), at.Add(time.Minute)))
		s.refused(t, "a duplicate reattach", err, want)
	})
	t.Run("cancelled while detached", func(t *testing.T) {
		t.Parallel()
		j := detached(t, func(j *job.Job) {
			j.State, j.ErrorClass, j.ErrorDetail, j.ExpiresAt = job.Abandoned, job.Cancelled, "", keep
		})
		at := due.Add(time.Second)
		got, err := s.store.Reattach(t.Context(), job.NewReattach(j, "next", at, at.Add(time.Minute)))
		s.applied(t, "reattach of a cancelled job", got, err, reattached(j, at))
	})
	t.Run("before it is due", func(t *testing.T) {
		t.Parallel()
		j := detached(t)
		at := due.Add(-time.Second)
		_, err := s.store.Reattach(t.Context(), job.NewReattach(j, "next", at, at.Add(time.Minute)))
		// Refused in code: a store states only the version and owner, so
		// the worker decides from the record (job.WhyRefused) and asks
		// only when due. The conflict carries the record unchanged.
		if _, ok := job.ConflictJob(err); !ok {
			t.Fatalf("reattach before due: %v, want a conflict", err)
		}
		same(t, "reattach before due (stored)", s.get(t, j.ID), j)
	})
	t.Run("of a record that moved", func(t *testing.T) {
		t.Parallel()
		j := detached(t)
		at := due.Add(time.Second)
		r := job.NewReattach(j, "next", at, at.Add(time.Minute))
		r.Version--
		_, err := s.store.Reattach(t.Context(), r)
		s.refused(t, "reattach of an older version", err, j)
		r = job.NewReattach(j, "next", at, at.Add(time.Minute))
		r.Of = "other"
		_, err = s.store.Reattach(t.Context(), r)
		s.refused(t, "reattach of another owner's detachment", err, j)
	})
}
