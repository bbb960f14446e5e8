package job

import (
	"math"
	"time"
)

// Action is what a worker does with a message after a decision.
type Action int

const (
	// Attempt means the claim may be tried (again).
	Attempt Action = iota
	// Drop means the job needs nothing more from this message: delete it.
	Drop
	// Wait means another worker holds a live lease: keep the message hidden
	// until that lease ends, so it returns only if the owner dies.
	Wait
	// Stop means end the job with Decision.Class.
	Stop
	// Retry means release the job and bring the message back after a backoff.
	Retry
	// Recover means the record carries a dead attempt (Job.DeadAttempt):
	// settle it first, with its parked outcome if its worker left one,
	// else by writing it off, then decide again.
	Recover
	// ReattachDue means the record's attempt is detached and its reattach
	// is due (Job.Due): take it back for a look at its generation
	// (Reattach), counting no new attempt.
	ReattachDue
)

// Decision is the outcome of a rule: an action and, for Stop, the class; for
// Wait, how long.
type Decision struct {
	Action Action
	Class  ErrorClass
	Delay  time.Duration
}

// WhyRefused decides what to do with a message whose claim was refused,
// given the record as it now is. It never calls for a model call on a job
// that is finished or held.
func WhyRefused(j Job, now time.Time) Decision {
	switch {
	case j.Due(now):
		// Before a dead attempt: a detached attempt's lease outlives its
		// due time, and one past it (the reattach message lost) is
		// reattached, not written off.
		return Decision{Action: ReattachDue}
	case j.Detached():
		return Decision{Action: Wait, Delay: j.Pending.Due.Sub(now)}
	case j.DeadAttempt(now):
		return Decision{Action: Recover}
	case j.State.Terminal() && j.LeaseOwner != "":
		// Finished (cancelled) while an attempt still holds its reserve:
		// its worker settles it, or, if it died, this message is the one
		// that writes it off once the lease runs out. Dropping it could
		// leave the hold on the record for good.
		return Decision{Action: Wait, Delay: j.LeaseUntil.Sub(now)}
	case j.State.Terminal():
		return Decision{Action: Drop}
	case j.LeaseLive(now):
		return Decision{Action: Wait, Delay: j.LeaseUntil.Sub(now)}
	case j.State == Queued && j.NotBefore.After(now) && j.Deadline.After(j.NotBefore):
		// Released with a backoff: a duplicate waits it out too.
		return Decision{Action: Wait, Delay: j.NotBefore.Sub(now)}
	case !j.Deadline.After(now) && j.ErrorClass == SpendLimit && j.State == Queued:
		// Deferred for its tenant's spend limit until the deadline: the
		// limit, not the time, kept it from running (docs/spend.md).
		return Decision{Action: Stop, Class: SpendLimit}
	case !j.Deadline.After(now):
		return Decision{Action: Stop, Class: DeadlineExceeded}
	case !Covers(j.Remaining(), j.Reserve):
		return Decision{Action: Stop, Class: BudgetExhausted}
	case j.Attempts >= j.MaxAttempts:
		c := j.ErrorClass
		if c == "" || !c.Valid() {
			c = Internal
		}
		return Decision{Action: Stop, Class: c}
	}
	// The record changed between the claim and the read: claim again.
	return Decision{Action: Attempt}
}

// NextAttempt is what the attempt after a failed one would take: the
// backoff before it, and the worst case it would need (at least the
// record's Reserve; more when it would start on a dearer rung).
type NextAttempt struct {
	Backoff time.Duration
	Reserve Nanocents
}

// AfterError decides what follows an attempt that ended with class, given
// the record as the claim left it (Attempts counts this attempt, Held
// its hold), the attempt's cost, and what the next attempt would take.
// Attempts are bounded by spend as well as by count.
func AfterError(j Job, now time.Time, class ErrorClass, cost Nanocents, next NextAttempt) Decision {
	backoff := next.Backoff
	switch {
	case !class.Retryable():
		return Decision{Action: Stop, Class: class}
	case j.Attempts >= j.MaxAttempts:
		return Decision{Action: Stop, Class: class}
	case !Covers(j.LeftAfter(cost), max(next.Reserve, j.Reserve)):
		return Decision{Action: Stop, Class: BudgetExhausted}
	case !j.Deadline.After(now.Add(backoff)):
		return Decision{Action: Stop, Class: DeadlineExceeded}
	}
	return Decision{Action: Retry, Delay: backoff}
}

// Backoff is the delay before attempt+1 after attempt failed: exponential
// from base, capped at max, with "equal jitter" (half fixed, half random,
// r in [0,1)) so retries spread out but never collapse to zero.
func Backoff(attempt int, base, max time.Duration, r float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if !(r >= 0) { // negative or NaN
		r = 0
	} else if r > 1 {
		r = 1
	}
	d := float64(base) * math.Pow(2, float64(attempt-1))
	if d > float64(max) || math.IsInf(d, 0) {
		d = float64(max)
	}
	out := d/2 + r*d/2
	if out >= float64(math.MaxInt64) { // float64(max) may round up past it
		return max
	}
	return time.Duration(out)
}
