package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// claimRefused: every way the claim precondition fails is a Conflict that
// carries the record, untouched.
func claimRefused(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
	}{
		{"succeeded", ended(job.Succeeded, "")},
		{"failed", ended(job.Failed, job.Auth)},
		{"abandoned", ended(job.Abandoned, job.Cancelled)},
		{"running, lease live one more millisecond", running("other", now.Add(time.Millisecond))},
		// A dead attempt is written off before any claim (job.WriteOff).
		{"running, lease_until is now", running("old", now)},
		{"running, lease long expired", running("old", now.Add(-time.Hour))},
		{"attempts used up", func(j *job.Job) { j.Attempts = j.MaxAttempts }},
		{"deadline is now", func(j *job.Job) { j.Deadline = now }},
		{"deadline passed", func(j *job.Job) { j.Deadline = now.Add(-time.Second) }},
		{"cost equals budget", func(j *job.Job) { j.Cost = j.Budget }},
		{"cost above budget", func(j *job.Job) { j.Cost = j.Budget + 1 }},
		{"no budget at all", func(j *job.Job) { j.Budget = 0 }},
		{"remaining budget below the reserve", func(j *job.Job) { j.Reserve, j.Cost = 11, j.Budget-10 }},
		{"a dead attempt's hold leaves less than the reserve", func(j *job.Job) {
			running("dead", now.Add(-time.Hour))(j)
			j.Reserve, j.Held = 11, j.Budget-10
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			_, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute)})
			s.refused(t, "claim", err, j)
		})
	}
}

// claimApplied: the claim's effect from every state it allows.
func claimApplied(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
	}{
		{"queued", nil},
		{"reserve exactly the remaining budget", func(j *job.Job) { j.Reserve, j.Cost = 11, j.Budget-11 }},
		{"no reserve", func(j *job.Job) { j.Reserve = 0 }},
		{"last attempt", func(j *job.Job) { j.Attempts = j.MaxAttempts - 1 }},
		{"deadline one millisecond away", func(j *job.Job) { j.Deadline = now.Add(time.Millisecond) }},
		{"after a write-off", func(j *job.Job) {
			j.Attempts, j.Cost, j.CostEstimated, j.WrittenOff = 1, reserve, true, []string{"old"}
			j.ErrorClass, j.ErrorDetail = job.Timeout, job.WriteOffDetail
		}},
		{"released: error class and detail kept", func(j *job.Job) {
			j.Attempts, j.Cost, j.ErrorClass, j.ErrorDetail = 1, 4, job.RateLimited, "http 429"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			got, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute)})
			want := j
			want.State, want.LeaseOwner, want.LeaseUntil = job.Running, "me", now.Add(time.Minute)
			want.Attempts++
			want.Held += j.Reserve
			want.Progress = 0
			want.Version++
			want.UpdatedAt = now
			s.applied(t, "claim", got, err, want)
		})
	}
}

// racingClaims: 16 claimers at once, exactly one wins; every loser is told
// who won.
func racingClaims(t *testing.T, s *suite) {
	const n = 16
	j := s.create(t)
	now := base.Add(time.Minute)
	type answer struct {
		got job.Job
		err error
	}
	answers := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			got, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: fmt.Sprint("w", i), Now: now, LeaseUntil: now.Add(time.Minute)})
			answers[i] = answer{got, err}
		})
	}
	close(start)
	wg.Wait()

	var winners []job.Job
	for i, a := range answers {
		if a.err == nil {
			winners = append(winners, a.got)
		} else if _, ok := job.ConflictJob(a.err); !ok {
			t.Errorf("claimer w%d: %v, want success or a Conflict", i, a.err)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d claims won, want exactly 1", len(winners))
	}
	win := winners[0]
	want := j
	want.State, want.LeaseOwner, want.LeaseUntil = job.Running, win.LeaseOwner, now.Add(time.Minute)
	want.Attempts, want.Version, want.UpdatedAt = 1, j.Version+1, now
	want.Held = j.Reserve // one hold: the winner's
	same(t, "winner", win, want)
	for i, a := range answers {
		if cur, ok := job.ConflictJob(a.err); ok {
			same(t, fmt.Sprintf("loser w%d (conflict record)", i), cur, want)
		}
	}
	same(t, "stored", s.get(t, j.ID), want)
}

// notBefore: a released job's backoff holds off every claim until it ends,
// and the claim that takes it clears it.
func notBefore(t *testing.T, s *suite) {
	ctx := t.Context()
	now := base.Add(time.Minute)
	j := s.create(t)
	s.claim(t, j.ID, "a", now)
	until := now.Add(10 * time.Second)
	released, err := s.store.Release(ctx, job.Release{ID: j.ID, Owner: "a", Now: now.Add(time.Second), Class: job.RateLimited, NotBefore: until})
	if err != nil {
		t.Fatal(err)
	}
	if !released.NotBefore.Equal(until) {
		t.Fatalf("not before = %s, want %s", released.NotBefore, until)
	}
	_, err = s.store.Claim(ctx, job.Claim{ID: j.ID, Owner: "b", Now: until.Add(-time.Millisecond), LeaseUntil: until.Add(time.Minute)})
	if cur, ok := job.ConflictJob(err); !ok || cur.Version != released.Version {
		t.Fatalf("a claim during the backoff: %v", err)
	}
	got := s.claim(t, j.ID, "b", until)
	if !got.NotBefore.IsZero() || got.LeaseOwner != "b" {
		t.Fatalf("claim after the backoff: %+v", got)
	}
}
