package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// attempt is one claimed attempt, from its claim to its recorded outcome.
// Like River's job executor, it is handed its worker's crew once, when the
// claim wins it (Worker.newAttempt), and reaches for nothing else.
type attempt struct {
	*crew
	admission *admission // its slot, its take, its renewal before the call

	// The attempt itself: its message, the record as the claim left it
	// (Attempts counts this attempt, Held holds its reserve), the lease
	// token, and when it started (its run time is added to the record).
	m     message
	j     job.Job
	owner string
	start time.Time
	log   *slog.Logger
	// held is the attempt's hold on the budget: the record's Reserve from
	// the claim, raised before a fallback rung whose worst case it does
	// not cover; the finish returns all of it.
	held job.Nanocents
	// holdUnsure says a raise of the hold failed without an answer: it may
	// have landed, and held may be less than the record holds for the
	// attempt (see confirmHold).
	holdUnsure bool
	// started is the id of the last generation a provider that keeps them
	// told the call (awaiter), and pending that generation as the record
	// holds it, once its Await landed (nil before): a detached rung's
	// attempt detaches only from a generation on the record.
	started string
	pending *job.Pending

	// While the call runs: the progress the provider last reported (float64
	// bits, written by the call and read by the heartbeat), the lease
	// guard, and the one way to stop the call with a cause.
	progress atomic.Uint64
	guard    *leaseGuard
	stopCall context.CancelCauseFunc
	// beatsDone stops the heartbeat and waits for it: once the outcome is
	// recorded, or when the attempt returns (nil before it starts).
	beatsDone func()
}

// run climbs the route's rungs in order, falling back on the classes the
// route names, under one lease that covers them all, and records the
// outcome. What happened is decided first (decide, a verdict), and one
// finish records it; only then does the heartbeat stop and the slot go
// back, whatever the verdict.
func (a *attempt) run(ctx context.Context) outcome {
	defer a.admission.leave(ctx)
	defer a.stopBeats()
	return a.finish(ctx, a.decide(ctx))
}

// decide takes the attempt as far as it goes, writing no outcome: an
// input or route it cannot run, a budget that does not cover the first
// rung, an admission refused, or the call and how it ended.
func (a *attempt) decide(ctx context.Context) verdict {
	if err := a.loadInput(ctx); err != nil {
		return a.inputVerdict(err)
	}
	var in job.Input
	if err := json.Unmarshal(a.j.Input, &in); err != nil {
		return verdict{write: verdictEnd, class: job.InvalidRequest, detail: "stored input is not valid"}
	}
	route, ok := a.routes[a.j.Model]
	if !ok || len(route.Rungs) == 0 {
		return verdict{write: verdictRetry, fail: failed{class: job.Internal, detail: "no route for model " + a.j.Model}}
	}
	// What this attempt may spend: the budget left once its own hold is
	// set aside (the claim checked the record's Reserve; the route's price
	// may have changed since the job was created).
	avail := a.j.LeftAfter(0)
	first := route.Reserve(in, a.j.Lanes) // the first rung's worst case, at today's prices
	if !job.Covers(avail, first) {
		return verdict{write: verdictEnd, class: job.BudgetExhausted, detail: "remaining budget below the first rung's worst case " + first.String() + " cents"}
	}
	if r, ok := a.admission.admit(ctx, route, in); !ok {
		return r.verdict()
	}
	r, why := a.perform(ctx, route, in, avail)
	return a.verdictOf(r, why, max(first, a.j.Reserve))
}

// perform runs the admitted attempt's calls: the resumed generation, or
// the climb, under the lease guard and with the heartbeat started. It
// answers how the climb ended and the cause its calls were stopped with.
// The heartbeat outlives it: it renews the lease while the outcome is
// written, and the finish stops it.
func (a *attempt) perform(ctx context.Context, route job.Route, in job.Input, avail job.Nanocents) (climbed, error) {
	limit, cause := a.limit(ctx, route)
	callCtx, stopCall := context.WithCancelCause(ctx)
	defer stopCall(nil)
	a.stopCall = stopCall
	timed, cancelTimer := context.WithTimeoutCause(callCtx, limit, cause)
	defer cancelTimer()

	// The lease guard stops the call before the lease ends unrenewed, on a
	// timer of its own: a heartbeat stuck in a call that never answers
	// cannot keep the model generating past the point where another
	// worker may claim the job.
	a.guard = newLeaseGuard(a.clock, a.timing.leaseMargin(), stopCall)
	a.guard.extend(a.j.LeaseUntil)
	defer a.guard.disarm()

	a.startHeartbeat(ctx, timed, route)

	began := time.Now()
	r, resumed := a.resume(timed, route, in)
	if !resumed {
		r = a.climb(timed, route, in, avail)
	}
	why := context.Cause(timed)
	stopCall(nil)
	a.guard.disarm() // nothing runs that a lapsing lease must stop
	r.took = time.Since(began)
	a.meter.Emit("AttemptDuration", float64(r.took.Milliseconds()), "Milliseconds", nil)
	a.meter.spent(r.paid.Cost)
	return r, why
}

// stopBeats stops the heartbeat, if it started, once the outcome is
// recorded (record stops it as soon as the write ends; this covers the
// finishes that write nothing, and a panic).
func (a *attempt) stopBeats() {
	if a.beatsDone != nil {
		a.beatsDone()
	}
}

// limit is how long the calls may run and what ends them then: the
// route's timeout, the job's deadline, or the function's deadline less a
// margin to record the outcome, whichever comes first.
func (a *attempt) limit(ctx context.Context, route job.Route) (time.Duration, error) {
	limit, cause := route.Timeout(), errRouteTimeout
	if left := a.j.Deadline.Sub(a.start); left < limit {
		limit, cause = left, errJobDeadline
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - a.timing.LambdaMargin; left < limit {
			limit, cause = left, errLambdaDeadline
		}
	}
	return limit, cause
}

// stamp is the time of a write to the record the attempt holds: the
// clock, but never at or before the claim's own updated_at, which a
// zero-latency call can reach within the same millisecond (the store would
// otherwise spend a read and a second write re-stamping it).
func (a *attempt) stamp() time.Time {
	return job.NextUpdate(a.j.UpdatedAt, a.clock.Now())
}
