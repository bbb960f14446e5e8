package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// paid is what a finish settles: the attempt's cost, the hold its claim
// took, and how long it ran.
type paid struct {
	cost, held job.Nanocents
	ran        time.Duration
	estimated  bool
}

// settled is want after p was settled on it.
func (p paid) settled(want job.Job) job.Job {
	want.Cost += p.cost
	want.Held -= p.held
	want.RunTime += p.ran
	want.CostEstimated = want.CostEstimated || p.estimated
	return want
}

// finish is one of the three transitions that settle an attempt, as done
// by owner at now.
type finish struct {
	name string
	call func(t *testing.T, id, owner string, now time.Time, p paid) (job.Job, error)
}

// finishes are succeed, release and end, in that order.
func finishes(s *suite) []finish {
	return []finish{
		{"succeed", func(t *testing.T, id, owner string, now time.Time, p paid) (job.Job, error) {
			return s.store.Succeed(t.Context(), job.Succeed{ID: id, Owner: owner, Now: now, Settlement: job.Settlement{Cost: p.cost, Held: p.held, Ran: p.ran, Estimated: p.estimated},
				Result: json.RawMessage(`{"output":"discarded"}`), Model: "m", ExpiresAt: keep})
		}},
		{"release", func(t *testing.T, id, owner string, now time.Time, p paid) (job.Job, error) {
			return s.store.Release(t.Context(), job.Release{ID: id, Owner: owner, Now: now, Settlement: job.Settlement{Cost: p.cost, Held: p.held, Ran: p.ran, Estimated: p.estimated}, Class: job.Timeout, Detail: "d"})
		}},
		{"end", func(t *testing.T, id, owner string, now time.Time, p paid) (job.Job, error) {
			return s.store.End(t.Context(), job.End{ID: id, Owner: owner, Now: now, Settlement: job.Settlement{Cost: p.cost, Held: p.held, Ran: p.ran, Estimated: p.estimated}, Class: job.Auth, Detail: "d", ExpiresAt: keep})
		}},
	}
}

// refusedFinishKeepsCost: a finish that is refused still settles its
// attempt (cost and run time added, hold returned), unconditionally, and
// changes nothing else; with nothing to settle it writes nothing.
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
			for _, p := range []paid{{333_333_333, reserve, ran, false}, {cost: 333_333_333}, {held: reserve}, {cost: 5, estimated: true}, {}} {
				t.Run(fmt.Sprintf("%s/%s/%+v", why.name, f.name, p), func(t *testing.T) {
					t.Parallel()
					// me's claim still holds its reserve, whatever became of the job.
					j := s.create(t, why.mut, func(j *job.Job) { j.Cost, j.Held = 1000, j.Held+reserve })
					_, err := f.call(t, j.ID, "me", now, p)
					want := j
					if p != (paid{}) {
						want = p.settled(want)
						want.Version++
						want.UpdatedAt = now
					}
					s.refused(t, f.name, err, want)
				})
			}
		}
	}
}

// holds: every claim holds the record's reserve and every settle returns
// it, so after attempts that all settled nothing is held, while a dead
// attempt's hold stays until the end.
func holds(t *testing.T, s *suite) {
	fs := finishes(s)
	now := base.Add(time.Minute)
	j := s.create(t, func(j *job.Job) { j.Reserve, j.MaxAttempts = 1_000_000, 10 })
	for i := range 3 {
		owner := fmt.Sprint("a", i)
		got := s.claim(t, j.ID, owner, now)
		if got.Held != 1_000_000 {
			t.Fatalf("claim %d holds %d, want 1000000", i, got.Held)
		}
		got, err := fs[1].call(t, j.ID, owner, now.Add(time.Second), paid{7, 1_000_000, time.Second, false})
		if err != nil || got.Held != 0 || got.Cost != job.Nanocents(7*(i+1)) || got.RunTime != time.Duration(i+1)*time.Second {
			t.Fatalf("release %d: %+v %v, want nothing held, cost %d, run time %ds", i, got, err, 7*(i+1), i+1)
		}
		now = now.Add(time.Minute)
	}
	// A worker dies holding its claim: no claim takes the job over until
	// the dead attempt is written off, its hold charged as cost.
	dead := s.claim(t, j.ID, "dead", now)
	later := now.Add(2 * time.Minute)
	if _, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "next", Now: later, LeaseUntil: later.Add(time.Minute)}); err == nil {
		t.Fatal("a claim took a job over with a dead attempt's hold on it")
	}
	off, err := s.store.WriteOff(t.Context(), job.NewWriteOff(dead, later))
	if err != nil || off.Held != 0 || off.Cost != 21+1_000_000 || !off.CostEstimated {
		t.Fatalf("write-off: %+v %v, want nothing held and the hold charged as an estimate", off, err)
	}
	s.claim(t, j.ID, "next", later)
	got, err := fs[2].call(t, j.ID, "next", now.Add(3*time.Minute), paid{5, 1_000_000, time.Second, false})
	if err != nil || got.Held != 0 || got.Cost != 26+1_000_000 {
		t.Fatalf("end: %+v %v, want nothing held and cost %d", got, err, 26+1_000_000)
	}
}

// costSum: the amounts of many attempts, applied and refused, add up
// exactly, every hold is returned, and the budget left over is exactly what
// the claim's reserve check sees.
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
			got, err := fs[1].call(t, j.ID, owner, now.Add(time.Second), paid{c, reserve, time.Millisecond, false})
			if err != nil || got.Cost != sum {
				t.Fatalf("attempt %d: release: cost %d (%v), want %d", i, got.Cost, err, sum)
			}
		} else { // the lease was lost: a refused succeed, release or end
			// The attempt is written off, then the job claimed again; the
			// attempt's own settlement replaces the estimate.
			thief := owner + "-thief"
			off, err := s.store.WriteOff(t.Context(), job.NewWriteOff(s.get(t, j.ID), now.Add(time.Minute)))
			if err != nil || off.Cost != sum-c+reserve {
				t.Fatalf("attempt %d: write-off: %+v %v, want cost %d", i, off, err, sum-c+reserve)
			}
			s.claim(t, j.ID, thief, now.Add(time.Minute))
			f := fs[(i/2)%len(fs)]
			_, err = f.call(t, j.ID, owner, now.Add(time.Minute+time.Second), paid{c, reserve, time.Millisecond, false})
			if cur, ok := job.ConflictJob(err); !ok || cur.Cost != sum || cur.LeaseOwner != thief {
				t.Fatalf("attempt %d: stale %s: %+v %v, want a Conflict with cost %d held by %s", i, f.name, cur, err, sum, thief)
			}
			if _, err := fs[1].call(t, j.ID, thief, now.Add(time.Minute+2*time.Second), paid{held: reserve}); err != nil {
				t.Fatalf("attempt %d: thief's release: %v", i, err)
			}
		}
		now = now.Add(3 * time.Minute)
	}
	if want := job.Nanocents(2_200_000_008); sum != want {
		t.Fatalf("the suite's own sum is %d, want %d", sum, want)
	}
	cur := s.get(t, j.ID)
	if cur.Cost != sum || cur.Held != 0 || cur.RunTime != time.Duration(len(amounts))*time.Millisecond {
		t.Fatalf("stored cost %d, held %d, run time %s, want exactly %d, nothing held, %d ms", cur.Cost, cur.Held, cur.RunTime, sum, len(amounts))
	}
	if cur.Remaining() != cur.Budget-sum {
		t.Fatalf("remaining %d, want exactly %d (what the claim's reserve check sees)", cur.Remaining(), cur.Budget-sum)
	}
}

// secondFinish: an owner whose release was applied no longer holds the job;
// its later, different finishes are refused and still add their cost.
func secondFinish(t *testing.T, s *suite) {
	fs := finishes(s)
	now := base.Add(time.Minute)
	j := s.create(t)
	s.claim(t, j.ID, "me", now)
	rel, err := fs[1].call(t, j.ID, "me", now.Add(time.Second), paid{5, reserve, time.Second, false})
	if err != nil {
		t.Fatal(err)
	}
	want := rel
	for i, f := range []int{2, 0} { // end, then succeed
		at := now.Add(time.Duration(2+i) * time.Second)
		_, err := fs[f].call(t, j.ID, "me", at, paid{cost: 7})
		want.Cost, want.Version, want.UpdatedAt = want.Cost+7, want.Version+1, at
		s.refused(t, "the released owner's "+fs[f].name, err, want)
	}
}

// estimatedCost: a settlement whose cost includes an estimate marks the
// record's cost estimated, applied or refused, and no later exact
// settlement clears the mark: a sum with one estimate in it is one.
func estimatedCost(t *testing.T, s *suite) {
	fs := finishes(s)
	now := base.Add(time.Minute)
	j := s.create(t, func(j *job.Job) { j.MaxAttempts = 10 })
	s.claim(t, j.ID, "a", now)
	got, err := fs[1].call(t, j.ID, "a", now.Add(time.Second), paid{cost: 9, held: reserve})
	if err != nil || got.CostEstimated {
		t.Fatalf("an exact release: %+v %v, want the cost not marked estimated", got, err)
	}
	s.claim(t, j.ID, "b", now.Add(time.Minute))
	got, err = fs[1].call(t, j.ID, "b", now.Add(time.Minute+time.Second), paid{cost: 11, held: reserve, estimated: true})
	if err != nil || !got.CostEstimated || got.Cost != 20 {
		t.Fatalf("an estimated release: %+v %v, want cost 20 marked estimated", got, err)
	}
	s.claim(t, j.ID, "c", now.Add(2*time.Minute))
	got, err = fs[0].call(t, j.ID, "c", now.Add(2*time.Minute+time.Second), paid{cost: 1, held: reserve})
	if err != nil || !got.CostEstimated || got.Cost != 21 {
		t.Fatalf("an exact success after an estimate: %+v %v, want cost 21 still marked estimated", got, err)
	}
	if cur := s.get(t, j.ID); !cur.CostEstimated {
		t.Fatalf("stored record %+v lost the estimate mark", cur)
	}
	// A refused finish marks the record too: its cost is added all the same.
	k := s.create(t, func(j *job.Job) { j.Budget, j.MaxAttempts = job.Cents(100), 10 })
	d := s.claim(t, k.ID, "d", now)
	if _, err := s.store.WriteOff(t.Context(), job.NewWriteOff(d, now.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	s.claim(t, k.ID, "thief", now.Add(2*time.Minute))
	_, err = fs[2].call(t, k.ID, "d", now.Add(2*time.Minute+time.Second), paid{cost: 4, held: reserve, estimated: true})
	if cur, ok := job.ConflictJob(err); !ok || !cur.CostEstimated || cur.Cost != 4 {
		t.Fatalf("refused estimated end: %+v %v, want a Conflict with cost 4 marked estimated", cur, err)
	}
}

// repeatedFinish: a finish sent again with the same owner, because the
// answer to the first was lost (a worker's retry, or a parked outcome
// applied while its own worker's last try landed), is recognised: an
// applied one answers the record as it left it, a refused one does not
// add its cost a second time.
func repeatedFinish(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	p := paid{5, reserve, time.Second, false}
	for _, f := range finishes(s) {
		t.Run(f.name+"/applied", func(t *testing.T) {
			t.Parallel()
			j := s.create(t)
			s.claim(t, j.ID, "me", now)
			first, err := f.call(t, j.ID, "me", now.Add(time.Second), p)
			if err != nil {
				t.Fatal(err)
			}
			again, err := f.call(t, j.ID, "me", now.Add(2*time.Second), p)
			s.applied(t, "the repeated "+f.name, again, err, first)
		})
		t.Run(f.name+"/refused", func(t *testing.T) {
			t.Parallel()
			j := s.create(t)
			s.claim(t, j.ID, "me", now)
			c, err := s.store.Cancel(t.Context(), job.Cancel{ID: j.ID, Tenant: j.Tenant, Now: now.Add(time.Second), ExpiresAt: keep})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.call(t, j.ID, "me", now.Add(2*time.Second), p)
			settled := p.settled(c)
			settled.LeaseOwner, settled.LeaseUntil = "", time.Time{}
			settled.Version, settled.UpdatedAt = c.Version+1, now.Add(2*time.Second)
			s.refused(t, "the "+f.name+" of a cancelled job", err, settled)
			_, err = f.call(t, j.ID, "me", now.Add(3*time.Second), p)
			s.refused(t, "the repeated "+f.name+" of a cancelled job", err, settled)
		})
	}
}

// savedSum: what an attempt's lanes saved is settled exactly as its cost
// is, so the record's saving is the job's, over every attempt: an applied
// finish adds it, a refused one still does (once, however often it is
// sent), a written-off attempt's late settlement adds it whole (only its
// cost replaces an estimate), and a premium lane's negative saving
// subtracts. Each settlement adds its attempt's lane the same way: once,
// applied or refused, in attempt order.
func savedSum(t *testing.T, s *suite) {
	ctx, now := t.Context(), base.Add(time.Minute)
	j := s.create(t, func(j *job.Job) { j.MaxAttempts = 10 })
	a := s.claim(t, j.ID, "a", now)
	at := now.Add(time.Second)
	got, err := s.store.Release(ctx, job.Release{ID: j.ID, Owner: "a", Now: at, Class: job.Timeout,
		Settlement: job.Settlement{Cost: 9, Held: reserve, Ran: time.Second, Saved: -3, Lane: job.Priority, Attempt: 1}})
	want := a
	want.AttemptLanes = []job.AttemptLane{{Attempt: 1, Lane: job.Priority}}
	want.State, want.ErrorClass, want.LeaseOwner, want.LeaseUntil = job.Queued, job.Timeout, "", time.Time{}
	want.Cost, want.Saved, want.Held, want.RunTime, want.Version, want.UpdatedAt = 9, -3, 0, time.Second, a.Version+1, at
	s.applied(t, "a priority lane's release", got, err, want)

	b := s.claim(t, j.ID, "b", now.Add(time.Minute))
	at = now.Add(time.Minute + time.Second)
	got, err = s.store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "b", Now: at, Settlement: job.Settlement{Cost: 6, Held: reserve, Ran: time.Second, Saved: 10, Lane: job.Flex, Attempt: 2},
		Result: json.RawMessage(`{"output":"x"}`), Model: "m", Lane: job.Flex, ExpiresAt: keep})
	want = b
	want.AttemptLanes = []job.AttemptLane{{Attempt: 1, Lane: job.Priority}, {Attempt: 2, Lane: job.Flex}}
	want.State, want.Result, want.ResultModel, want.ResultLane = job.Succeeded, json.RawMessage(`{"output":"x"}`), "m", job.Flex
	want.ErrorClass, want.LeaseOwner, want.LeaseUntil, want.Progress, want.ExpiresAt = "", "", time.Time{}, 1, keep
	want.Cost, want.Saved, want.Held, want.RunTime, want.Version, want.UpdatedAt = 15, 7, 0, 2*time.Second, b.Version+1, at
	s.applied(t, "a flex lane's success", got, err, want)

	// The released attempt's late end (another rung's call it still paid
	// for) is refused, and its premium still subtracted, once.
	late := job.End{ID: j.ID, Owner: "a", Now: at.Add(time.Second), Settlement: job.Settlement{Cost: 2, Saved: -4, Lane: job.Standard, Attempt: 1},
		Class: job.Timeout, ExpiresAt: keep}
	_, err = s.store.End(ctx, late)
	want.Cost, want.Saved, want.Version, want.UpdatedAt = 17, 3, want.Version+1, late.Now
	want.AttemptLanes = []job.AttemptLane{{Attempt: 1, Lane: job.Priority}, {Attempt: 1, Lane: job.Standard}, {Attempt: 2, Lane: job.Flex}}
	s.refused(t, "the released attempt's end", err, want)
	late.Now = late.Now.Add(time.Second)
	_, err = s.store.End(ctx, late)
	s.refused(t, "the released attempt's end, sent again", err, want)

	k := s.create(t, func(j *job.Job) { j.MaxAttempts, j.Saved = 10, 5 })
	d := s.claim(t, k.ID, "d", now)
	off, err := s.store.WriteOff(ctx, job.NewWriteOff(d, now.Add(2*time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	at = now.Add(2*time.Minute + time.Second)
	_, err = s.store.Release(ctx, job.Release{ID: k.ID, Owner: "d", Now: at, Class: job.Timeout,
		Settlement: job.Settlement{Cost: 4, Held: reserve, Ran: time.Second, Saved: -6, Lane: job.Batch, Attempt: 1}})
	want = off
	want.AttemptLanes = []job.AttemptLane{{Attempt: 1, Lane: job.Batch}}
	want.Cost, want.Saved, want.RunTime, want.Version, want.UpdatedAt = 4, -1, time.Second, off.Version+1, at
	s.refused(t, "a written-off attempt's late release", err, want)
}
