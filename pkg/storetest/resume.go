package storetest

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// pending is the generation "old" started, holding the reserve, after
// its earlier rungs cost 10.
var pending = job.Pending{Owner: "old", Provider: "openai", Model: "gpt", ID: "resp_1", Held: reserve, Paid: 10}

// await: the attempt holding the job records the generation it started;
// anyone else is refused, and the record is unchanged.
func await(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	t.Run("by the owner", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		p := pending
		p.Owner = "me"
		got, err := s.store.Await(t.Context(), job.Await{ID: j.ID, Owner: "me", Now: now, Pending: p})
		want := j
		want.Pending = &p
		want.Version, want.UpdatedAt = j.Version+1, now
		s.applied(t, "await", got, err, want)

		next := p
		// The next rung's generation, in another lane, replaces it.
		next.ID, next.Paid, next.Lane = "resp_2", 30, job.Flex
		got, err = s.store.Await(t.Context(), job.Await{ID: j.ID, Owner: "me", Now: now.Add(time.Second), Pending: next})
		want.Pending = &next
		want.Version, want.UpdatedAt = want.Version+1, now.Add(time.Second)
		s.applied(t, "the second await", got, err, want)
	})
	t.Run("by another owner", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		_, err := s.store.Await(t.Context(), job.Await{ID: j.ID, Owner: "other", Now: now, Pending: pending})
		s.refused(t, "await by another owner", err, j)
	})
}

// resume: a written-off attempt's generation, resumed by the next
// attempt, replaces the estimate its write-off charged with what it cost
// (plus what the attempt had paid before it) and adds what its lane
// saved, once: a repeated resume and the attempt's own late settlement,
// in either order, leave it alone.
func resume(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	// writtenOff is a job whose attempt "old" started pending and was
	// written off, now claimed by "next"; its cost is 1000 before "old".
	writtenOff := func(t *testing.T) job.Job {
		j := s.create(t, running("old", now), func(j *job.Job) { j.Cost, j.Pending = 1000, &pending })
		if _, err := s.store.WriteOff(t.Context(), job.NewWriteOff(j, now)); err != nil {
			t.Fatal(err)
		}
		return s.claim(t, j.ID, "next", now.Add(time.Second))
	}
	at := now.Add(2 * time.Second)
	r := func(id string) job.Resume { return job.Resume{ID: id, Now: at, Of: pending, Cost: 7, Saved: 3} }
	t.Run("replaces the estimate", func(t *testing.T) {
		t.Parallel()
		j := writtenOff(t)
		if j.Cost != 1000+reserve || !j.Resumable() {
			t.Fatalf("after the write-off: cost %d, resumable %v; want %d, true", j.Cost, j.Resumable(), 1000+reserve)
		}
		got, err := s.store.Resume(t.Context(), r(j.ID))
		want := j
		want.Cost = 1017 // 1000 + what old paid before (10) + the generation (7)
		want.Saved = j.Saved + 3
		want.Version, want.UpdatedAt = j.Version+1, at
		s.applied(t, "resume", got, err, want)

		_, err = s.store.Resume(t.Context(), r(j.ID))
		if err != nil {
			t.Fatalf("a repeated resume: %v, want the record unchanged", err)
		}
		same(t, "after a repeated resume", s.get(t, j.ID), want)

		late := job.Release{ID: j.ID, Owner: "old", Now: at.Add(time.Second), Settlement: job.Settlement{Cost: 50, Held: reserve}, Class: job.Timeout}
		_, err = s.store.Release(t.Context(), late)
		s.refused(t, "the attempt's own late release", err, want)
	})
	t.Run("after the attempt's own late settlement", func(t *testing.T) {
		t.Parallel()
		j := writtenOff(t)
		late := job.Succeed{ID: j.ID, Owner: "old", Now: at, Settlement: job.Settlement{Cost: 50, Held: reserve, Ran: ran}, Model: "m", ExpiresAt: keep}
		_, err := s.store.Succeed(t.Context(), late)
		want := j
		want.Cost, want.RunTime = 1050, j.RunTime+ran
		want.Version, want.UpdatedAt = j.Version+1, at
		s.refused(t, "the late success", err, want)

		got, err := s.store.Resume(t.Context(), job.Resume{ID: j.ID, Now: at.Add(time.Second), Of: pending, Cost: 7})
		s.applied(t, "a resume after the late settlement", got, err, want)
	})
	t.Run("of an attempt not written off", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, running("old", now.Add(time.Minute)), func(j *job.Job) { j.Pending = &pending })
		if j.Resumable() {
			t.Fatal("a live attempt's generation is resumable")
		}
		_, err := s.store.Resume(t.Context(), r(j.ID))
		s.refused(t, "resume", err, j)
	})
}
