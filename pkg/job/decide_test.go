package job_test

import (
	"math"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestWhyRefused(t *testing.T) {
	const reserve = job.Nanocents(1_000_000_000) // queued()'s Reserve
	tests := []struct {
		name string
		j    job.Job
		want job.Decision
	}{
		{"succeeded", with(running(), func(j *job.Job) { j.State, j.LeaseOwner = job.Succeeded, "" }), job.Decision{Action: job.Drop}},
		{"failed", with(queued(), func(j *job.Job) { j.State, j.ErrorClass = job.Failed, job.Auth }), job.Decision{Action: job.Drop}},
		{"abandoned, even past deadline and budget", with(queued(), func(j *job.Job) {
			j.State, j.Deadline, j.Cost = job.Abandoned, t0.Add(-time.Hour), j.Budget
		}), job.Decision{Action: job.Drop}},
		{"live lease", running(), job.Decision{Action: job.Wait, Delay: 30 * time.Second}},
		{"live lease, 1ms left", with(running(), func(j *job.Job) { j.LeaseUntil = t0.Add(time.Millisecond) }), job.Decision{Action: job.Wait, Delay: time.Millisecond}},
		{"live lease beats a passed deadline", with(running(), func(j *job.Job) { j.Deadline = t0.Add(-time.Second) }), job.Decision{Action: job.Wait, Delay: 30 * time.Second}},
		{"deadline now", with(queued(), func(j *job.Job) { j.Deadline = t0 }), job.Decision{Action: job.Stop, Class: job.DeadlineExceeded}},
		{"deadline passed, expired lease", with(running(), func(j *job.Job) { j.Deadline, j.LeaseUntil = t0.Add(-time.Second), t0 }), job.Decision{Action: job.Recover}},
		{"deadline beats budget and attempts", with(queued(), func(j *job.Job) { j.Deadline, j.Cost, j.Attempts = t0, j.Budget, 3 }), job.Decision{Action: job.Stop, Class: job.DeadlineExceeded}},
		{"budget spent", with(queued(), func(j *job.Job) { j.Cost = j.Budget }), job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"budget overspent", with(queued(), func(j *job.Job) { j.Cost = j.Budget * 2 }), job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"remaining < reserve", with(queued(), func(j *job.Job) { j.Cost = j.Budget - reserve + 1 }), job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"budget beats attempts", with(queued(), func(j *job.Job) { j.Cost, j.Attempts = j.Budget, 3 }), job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"attempts used, last class kept", with(queued(), func(j *job.Job) { j.Attempts, j.ErrorClass = 3, job.RateLimited }), job.Decision{Action: job.Stop, Class: job.RateLimited}},
		{"attempts used by a crashed worker", with(running(), func(j *job.Job) { j.Attempts, j.LeaseUntil = 3, t0.Add(-time.Second) }), job.Decision{Action: job.Recover}},
		{"attempts used, no class", with(queued(), func(j *job.Job) { j.Attempts = 3 }), job.Decision{Action: job.Stop, Class: job.Internal}},
		{"a cancelled job whose attempt died", with(running(), func(j *job.Job) { j.State, j.LeaseUntil = job.Abandoned, t0 }), job.Decision{Action: job.Recover}},
		{"a cancelled job whose attempt still runs", with(running(), func(j *job.Job) { j.State = job.Abandoned }), job.Decision{Action: job.Wait, Delay: 30 * time.Second}},
		{"attempts used, unknown class", with(queued(), func(j *job.Job) { j.Attempts, j.ErrorClass = 3, "vendor said no" }), job.Decision{Action: job.Stop, Class: job.Internal}},
		{"claimable after all (record changed)", queued(), job.Decision{Action: job.Attempt}},
		{"remaining = reserve", with(queued(), func(j *job.Job) { j.Cost = j.Budget - reserve }), job.Decision{Action: job.Attempt}},
		{"expired lease, attempts left", with(running(), func(j *job.Job) { j.LeaseUntil = t0.Add(-time.Second) }), job.Decision{Action: job.Recover}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := job.WhyRefused(tt.j, t0); got != tt.want {
				t.Errorf("WhyRefused = %+v, want %+v", got, tt.want)
			}
			// Attempt exactly when the claim would have been allowed.
			allowed := job.Claim{Now: t0}.Allows(tt.j)
			if got := job.WhyRefused(tt.j, t0).Action == job.Attempt; got != allowed {
				t.Errorf("Attempt = %v but Claim.Allows = %v", got, allowed)
			}
			if d := job.WhyRefused(tt.j, t0); d.Action == job.Stop && !d.Class.Valid() {
				t.Errorf("Stop with unknown class %q", d.Class)
			}
		})
	}
}

// TestWhyRefusedAfterWriteOff: what a dead attempt leaves decides the
// job's next step once it is written off: its hold is cost now.
func TestWhyRefusedAfterWriteOff(t *testing.T) {
	const reserve = job.Nanocents(1_000_000_000) // queued()'s Reserve
	dead := func(f func(*job.Job)) job.Job {
		return with(running(), func(j *job.Job) { j.LeaseUntil = t0.Add(-time.Second); f(j) })
	}
	tests := []struct {
		name string
		j    job.Job
		want job.Decision
	}{
		{"attempts left", dead(func(*job.Job) {}), job.Decision{Action: job.Attempt}},
		{"deadline passed", dead(func(j *job.Job) { j.Deadline = t0 }), job.Decision{Action: job.Stop, Class: job.DeadlineExceeded}},
		{"attempts used: the dead attempt's class", dead(func(j *job.Job) { j.Attempts = 3 }), job.Decision{Action: job.Stop, Class: job.Timeout}},
		{"the dead hold, now cost, leaves less than the reserve", dead(func(j *job.Job) { j.Cost = j.Budget - 2*reserve + 1 }), job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"the dead hold, now cost, leaves the reserve", dead(func(j *job.Job) { j.Cost = j.Budget - 2*reserve }), job.Decision{Action: job.Attempt}},
		{"cancelled while it ran", dead(func(j *job.Job) { j.State = job.Abandoned }), job.Decision{Action: job.Drop}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := job.WhyRefused(tt.j, t0); got.Action != job.Recover {
				t.Fatalf("before the write-off: %+v, want Recover", got)
			}
			after := job.NewWriteOff(tt.j, t0).Apply(tt.j)
			if got := job.WhyRefused(after, t0); got != tt.want {
				t.Errorf("after the write-off: %+v, want %+v", got, tt.want)
			}
			if after.Held != 0 || after.LeaseOwner != "" {
				t.Errorf("after the write-off: held %d, lease owner %q", after.Held, after.LeaseOwner)
			}
		})
	}
}

func TestAfterError(t *testing.T) {
	const (
		reserve = job.Nanocents(1_000_000_000)
		backoff = 10 * time.Second
	)
	// claimed is the record as a first claim leaves it: 1 of 3 attempts.
	claimed := running()
	tests := []struct {
		name    string
		j       job.Job
		class   job.ErrorClass
		cost    job.Nanocents
		backoff time.Duration
		want    job.Decision
	}{
		{"retryable", claimed, job.RateLimited, 5, backoff, job.Decision{Action: job.Retry, Delay: backoff}},
		{"unknown class retries like internal", claimed, "weird", 0, backoff, job.Decision{Action: job.Retry, Delay: backoff}},
		{"permanent", claimed, job.ContentFiltered, 5, backoff, job.Decision{Action: job.Stop, Class: job.ContentFiltered}},
		{"auth", claimed, job.Auth, 0, backoff, job.Decision{Action: job.Stop, Class: job.Auth}},
		{"permanent beats everything", with(claimed, func(j *job.Job) { j.Attempts, j.Cost = 3, j.Budget }), job.QuotaExhausted, 5, backoff, job.Decision{Action: job.Stop, Class: job.QuotaExhausted}},
		{"abandoning class stops with itself", claimed, job.Cancelled, 0, backoff, job.Decision{Action: job.Stop, Class: job.Cancelled}},
		{"attempts used", with(claimed, func(j *job.Job) { j.Attempts = 3 }), job.Timeout, 5, backoff, job.Decision{Action: job.Stop, Class: job.Timeout}},
		{"attempts used beats budget", with(claimed, func(j *job.Job) { j.Attempts, j.Cost = 3, j.Budget }), job.Network, 5, backoff, job.Decision{Action: job.Stop, Class: job.Network}},
		{"this attempt's cost leaves less than a reserve", claimed, job.Overloaded, job.Cents(50) - reserve + 1, backoff, job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"this attempt's cost leaves exactly a reserve", claimed, job.Overloaded, job.Cents(50) - reserve, backoff, job.Decision{Action: job.Retry, Delay: backoff}},
		{"earlier cost plus this one", with(claimed, func(j *job.Job) { j.Cost = job.Cents(30) }), job.ProviderError, job.Cents(20), backoff, job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"budget spent by this attempt", claimed, job.ProviderError, job.Cents(60), backoff, job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"budget beats deadline", with(claimed, func(j *job.Job) { j.Deadline = t0 }), job.Timeout, job.Cents(50), backoff, job.Decision{Action: job.Stop, Class: job.BudgetExhausted}},
		{"backoff ends at the deadline", with(claimed, func(j *job.Job) { j.Deadline = t0.Add(backoff) }), job.Timeout, 0, backoff, job.Decision{Action: job.Stop, Class: job.DeadlineExceeded}},
		{"backoff ends past the deadline", with(claimed, func(j *job.Job) { j.Deadline = t0.Add(time.Second) }), job.Timeout, 0, backoff, job.Decision{Action: job.Stop, Class: job.DeadlineExceeded}},
		{"backoff ends just before the deadline", with(claimed, func(j *job.Job) { j.Deadline = t0.Add(backoff + time.Millisecond) }), job.Timeout, 0, backoff, job.Decision{Action: job.Retry, Delay: backoff}},
		{"deadline already passed", with(claimed, func(j *job.Job) { j.Deadline = t0.Add(-time.Minute) }), job.Internal, 0, 0, job.Decision{Action: job.Stop, Class: job.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := job.AfterError(tt.j, t0, tt.class, tt.cost, job.NextAttempt{Backoff: tt.backoff, Reserve: reserve}); got != tt.want {
				t.Errorf("AfterError = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	const (
		base = 2 * time.Second
		max  = 5 * time.Minute
	)
	tests := []struct {
		name    string
		attempt int
		r       float64
		want    time.Duration
	}{
		{"1, r=0: half of base", 1, 0, time.Second},
		{"1, r=0.5", 1, 0.5, 1500 * time.Millisecond},
		{"2, r=0", 2, 0, 2 * time.Second},
		{"3, r=0", 3, 0, 4 * time.Second},
		{"4, r=0", 4, 0, 8 * time.Second},
		{"8, r=0: 2s x 128 / 2", 8, 0, 128 * time.Second},
		{"9: capped, r=0", 9, 0, max / 2},
		{"9: capped, r=0.5", 9, 0.5, max * 3 / 4},
		{"0 is 1", 0, 0, time.Second},
		{"-5 is 1", -5, 0, time.Second},
		{"min int is 1", math.MinInt, 0, time.Second},
		{"64 does not overflow", 64, 0, max / 2},
		{"1000 does not overflow", 1000, 0.5, max * 3 / 4},
		{"max int does not overflow", math.MaxInt, 0, max / 2},
		{"negative r is 0", 1, -3, time.Second},
		{"NaN r is 0", 3, math.NaN(), 4 * time.Second},
		{"r above 1 is 1", 3, 7, 8 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := job.Backoff(tt.attempt, base, max, tt.r); got != tt.want {
				t.Errorf("Backoff(%d, r=%v) = %s, want %s", tt.attempt, tt.r, got, tt.want)
			}
		})
	}
	// Bounds: for every attempt, r=0 gives exactly half, r->1 stays below
	// the full delay, and growth is exponential until the cap.
	almostOne := math.Nextafter(1, 0)
	prev := time.Duration(0)
	for attempt := 1; attempt <= 200; attempt++ {
		full := base
		for i := 1; i < attempt && full < max; i++ {
			full *= 2
		}
		full = min(full, max)
		lo, hi := job.Backoff(attempt, base, max, 0), job.Backoff(attempt, base, max, almostOne)
		if lo != full/2 {
			t.Errorf("attempt %d: r=0 gives %s, want %s", attempt, lo, full/2)
		}
		if hi < lo || hi > full {
			t.Errorf("attempt %d: r->1 gives %s, outside [%s, %s]", attempt, hi, lo, full)
		}
		if lo < prev {
			t.Errorf("attempt %d: %s shrank from %s", attempt, lo, prev)
		}
		if full < max && attempt > 1 && lo != 2*prev {
			t.Errorf("attempt %d: %s is not twice %s", attempt, lo, prev)
		}
		prev = lo
	}
	// A cap as large as a Duration can hold does not wrap around.
	huge := time.Duration(math.MaxInt64)
	for _, r := range []float64{0, 0.5, almostOne, 1} {
		if got := job.Backoff(1000, base, huge, r); got < huge/2 {
			t.Errorf("Backoff(1000, max=MaxInt64, r=%v) = %s, want at least %s", r, got, huge/2)
		}
	}
}

// TestTheBudgetRule: every stage (create, claim, after an error, replay,
// a fallback rung) asks the same question, Covers; nothing left covers
// nothing, even a free worst case.
func TestTheBudgetRule(t *testing.T) {
	for _, c := range []struct {
		left, need job.Nanocents
		want       bool
	}{
		{10, 10, true}, {10, 9, true}, {10, 11, false}, {0, 0, false}, {1, 0, true}, {-5, 0, false},
	} {
		if got := job.Covers(c.left, c.need); got != c.want {
			t.Errorf("Covers(%d, %d) = %v, want %v", c.left, c.need, got, c.want)
		}
	}
}

func TestReplayAttemptsAreBoundedByTheBudget(t *testing.T) {
	j := job.Job{Budget: 100, Cost: 30, Reserve: 20}
	for _, c := range []struct{ asked, want int }{{0, 3}, {2, 2}, {5, 3}} {
		if got := job.ReplayAttempts(j, c.asked); got != c.want {
			t.Errorf("ReplayAttempts(asked %d) = %d, want %d (70 left, 20 each)", c.asked, got, c.want)
		}
	}
	if got := job.ReplayAttempts(job.Job{Budget: 100, Cost: 90, Reserve: 20}, 3); got != 0 {
		t.Errorf("10 left for a reserve of 20: %d attempts, want none", got)
	}
}
