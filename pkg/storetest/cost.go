package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// finish is one of the three transitions that carry an attempt's cost, as
// done by owner at now.
type finish struct {
	name string
	call func(t *testing.T, id, owner string, now time.Time, cost job.Nanocents) (job.Job, error)
}

// finishes are succeed, release and end, in that order.
func finishes(s *suite) []finish {
	return []finish{
		{"succeed", func(t *testing.T, id, owner string, now time.Time, cost job.Nanocents) (job.Job, error) {
			return s.store.Succeed(t.Context(), job.Succeed{ID: id, Owner: owner, Now: now, Cost: cost,
				Result: json.RawMessage(`{"output":"discarded"}`), Model: "m", ExpiresAt: keep})
		}},
		{"release", func(t *testing.T, id, owner string, now time.Time, cost job.Nanocents) (job.Job, error) {
			return s.store.Release(t.Context(), job.Release{ID: id, Owner: owner, Now: now, Cost: cost, Class: job.Timeout, Detail: "d"})
		}},
		{"end", func(t *testing.T, id, owner string, now time.Time, cost job.Nanocents) (job.Job, error) {
			return s.store.End(t.Context(), job.End{ID: id, Owner: owner, Now: now, Cost: cost, Class: job.Auth, Detail: "d", ExpiresAt: keep})
		}},
	}
}

// refusedFinishKeepsCost: a finish that is refused still adds its cost,
// unconditionally, and changes nothing else; with no cost it writes nothing.
func refusedFinishKeepsCost(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, why := range []struct {
		name string
		mut  func(*job.Job)
	}{
		{"lease taken over", running("thief", now.Add(time.Hour))},
		{"job cancelled", ended(job.Abandoned, job.Cancelled)},
		{"job succeeded", ended(job.Succeeded, "")},
		{"job queued again", func(j *job.Job) { j.Attempts, j.ErrorClass = 1, job.RateLimited }},
	} {
		for _, f := range finishes(s) {
			for _, cost := range []job.Nanocents{333_333_333, 0} {
				t.Run(fmt.Sprintf("%s/%s/cost %d", why.name, f.name, cost), func(t *testing.T) {
					t.Parallel()
					j := s.create(t, why.mut, func(j *job.Job) { j.Cost = 1000 })
					_, err := f.call(t, j.ID, "me", now, cost)
					want := j
					if cost != 0 {
						want.Cost += cost
						want.Version++
						want.UpdatedAt = now
					}
					s.refused(t, f.name, err, want)
				})
			}
		}
	}
}

// costSum: the amounts of many attempts, applied and refused, add up
// exactly, and the budget left over is exactly what the claim's reserve
// check sees.
func costSum(t *testing.T, s *suite) {
	amounts := []job.Nanocents{1, 333_333_333, job.NanosPerCent / 10, 333_333_333, 1, 999_999_999, 333_333_334, 7, job.NanosPerCent / 10}
	j := s.create(t, func(j *job.Job) { j.Budget, j.MaxAttempts, j.Deadline = job.Cents(100), 100, base.Add(24*time.Hour) })
	fs := finishes(s)
	now := base.Add(time.Minute)
	var sum job.Nanocents
	for i, c := range amounts {
		owner := fmt.Sprint("attempt-", i)
		s.claim(t, j.ID, owner, now)
		sum += c
		if i%2 == 0 { // applied release
			got, err := fs[1].call(t, j.ID, owner, now.Add(time.Second), c)
			if err != nil || got.Cost != sum {
				t.Fatalf("attempt %d: release: cost %d (%v), want %d", i, got.Cost, err, sum)
			}
		} else { // the lease was lost: a refused succeed, release or end
			thief := owner + "-thief"
			s.claim(t, j.ID, thief, now.Add(time.Minute))
			f := fs[(i/2)%len(fs)]
			_, err := f.call(t, j.ID, owner, now.Add(time.Minute+time.Second), c)
			if cur, ok := job.ConflictJob(err); !ok || cur.Cost != sum || cur.LeaseOwner != thief {
				t.Fatalf("attempt %d: stale %s: %+v %v, want a Conflict with cost %d held by %s", i, f.name, cur, err, sum, thief)
			}
			if _, err := fs[1].call(t, j.ID, thief, now.Add(time.Minute+2*time.Second), 0); err != nil {
				t.Fatalf("attempt %d: thief's release: %v", i, err)
			}
		}
		now = now.Add(3 * time.Minute)
	}
	if want := job.Nanocents(2_200_000_008); sum != want {
		t.Fatalf("the suite's own sum is %d, want %d", sum, want)
	}
	cur := s.get(t, j.ID)
	if cur.Cost != sum {
		t.Fatalf("stored cost %d, want exactly %d", cur.Cost, sum)
	}
	left := cur.Budget - sum
	_, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "over", Now: now, LeaseUntil: now.Add(time.Minute), Reserve: left + 1})
	s.refused(t, "claim reserving one nanocent more than is left", err, cur)
	got, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "exact", Now: now, LeaseUntil: now.Add(time.Minute), Reserve: left})
	if err != nil || got.Cost != sum {
		t.Fatalf("claim reserving exactly what is left: %+v %v", got, err)
	}
}

// secondFinish: an owner whose release was applied no longer holds the job;
// its later, different finishes are refused and still add their cost.
func secondFinish(t *testing.T, s *suite) {
	fs := finishes(s)
	now := base.Add(time.Minute)
	j := s.create(t)
	s.claim(t, j.ID, "me", now)
	rel, err := fs[1].call(t, j.ID, "me", now.Add(time.Second), 5)
	if err != nil {
		t.Fatal(err)
	}
	want := rel
	for i, f := range []int{2, 0} { // end, then succeed
		at := now.Add(time.Duration(2+i) * time.Second)
		_, err := fs[f].call(t, j.ID, "me", at, 7)
		want.Cost, want.Version, want.UpdatedAt = want.Cost+7, want.Version+1, at
		s.refused(t, "the released owner's "+fs[f].name, err, want)
	}
}
