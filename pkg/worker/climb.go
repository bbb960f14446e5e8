package worker

import (
	"context"
	"math"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// climbed is how an attempt's climb down the route ended: the response of
// the rung that answered, or the error and class of the last rung tried,
// what every rung tried cost together (the Cost and Estimated of the
// attempt's settlement), and how long the climb took.
type climbed struct {
	resp  model.Response
	err   error
	class job.ErrorClass
	rung  job.Rung
	tried int
	paid  job.Settlement
	took  time.Duration
	// enlisted says the attempt made no call: it handed the job to its
	// rung's batch lane (attempt.enlist), whose collector settles it.
	enlisted bool
	// wait is how long the bucket of the next call's key asked to wait
	// when the climb stopped for it (attempt.outOfCapacity).
	wait time.Duration
}

// pay adds what a call with usage u on rung g cost, and saved against
// g's standard lane, to what the climb paid; g's lane is the attempt's
// last call's so far.
func (r *climbed) pay(u model.Usage, g job.Rung) {
	if r.paid.Lane = g.Lane; r.paid.Lane == "" {
		r.paid.Lane = job.Standard
	}
	r.paid.Cost += u.Cost(g.Price)
	r.paid.Saved += u.Saved(g)
	r.paid.Estimated = r.paid.Estimated || u.Estimated
}

// climb calls the route's rungs in order until one answers, one fails with
// a class the route does not fall back on, the attempt's own context ends,
// or the next call's worst case no longer fits in avail. On each rung it
// tries the lanes the rung's plan names (job.Rung.Plan: the cheapest that
// fit the job's deadline first), moving on to the next lane when one
// refuses for want of capacity or outlives its own timeout.
func (a *attempt) climb(ctx context.Context, route job.Route, in job.Input, avail job.Nanocents) climbed {
	var r climbed
	first := true
	for i, rung := range route.Rungs {
		if ctx.Err() != nil {
			// The attempt ended before this rung (a lease that could not be
			// renewed even before the first call): never start a call.
			if first {
				r.err, r.class = context.Cause(ctx), job.Timeout
			}
			return r
		}
		plan, offered := a.plan(rung, in, avail-r.paid.Cost)
		if !offered {
			continue // the job allows none of this rung's lanes
		}
		if len(plan) == 0 {
			a.log.Info("no fallback: the next rung's worst case does not fit the budget", "error_class", r.class, "rung", i)
			return r
		}
		if !first {
			a.log.Info("falling back to the next rung", "error_class", r.class, "rung", i, "provider", rung.Provider, "model", rung.Model)
			a.meter.count("Fallbacks", map[string]string{"ErrorClass": string(r.class)})
		}
		r.tried = i + 1
		if a.climbLanes(ctx, &r, plan, in, first) {
			return r
		}
		first = false
		if !route.FallsBackOn(r.class) {
			return r
		}
	}
	return r
}

// plan is the lanes of rung to try with avail left of the budget, and
// whether the rung offers any lane the job allows.
func (a *attempt) plan(rung job.Rung, in job.Input, avail job.Nanocents) ([]job.Rung, bool) {
	left := a.j.Deadline.Sub(a.clock.Now())
	if len(rung.Plan(in, a.j.Lanes, left, job.Nanocents(math.MaxInt64))) == 0 {
		return nil, false
	}
	return rung.Plan(in, a.j.Lanes, left, avail), true
}

// climbLanes calls the lanes of one rung's plan in turn, first saying
// whether the attempt's admission took for its first call (the entry
// rung's), and reports whether the climb is over: answered, enlisted in
// the batch lane, the attempt itself ended, or the next call could not be
// made (its hold or its take refused). Otherwise r holds how the rung's
// last lane failed.
func (a *attempt) climbLanes(ctx context.Context, r *climbed, plan []job.Rung, in job.Input, first bool) bool {
	moved := false // a call in this rung's plan came before
	for k, lane := range plan {
		if lane.Lane == job.Batch {
			until, ok := a.batchLease(lane, plan[k+1:])
			if !first || moved || !ok {
				continue // a job enters a batch lane only before any call, with time to wait
			}
			r.rung, r.enlisted = lane, true
			if r.err = a.enlist(ctx, lane, in, until); r.err != nil {
				r.class, r.enlisted = job.Internal, false
			}
			return true
		}
		if !a.holdFor(ctx, r.paid.Cost+lane.WorstCase(in)) {
			if r.err == nil {
				// Nothing was called yet: the attempt fails, retried.
				r.err, r.class = errHoldRefused, job.Internal
			}
			return true
		}
		if !first || moved {
			// No wait in place here: the route's timeout and the lease's
			// cap are already running.
			if wait, _ := a.take(ctx, lane, in, 0); wait > 0 {
				a.log.Info("no fallback: the next call's provider is rate limited", "error_class", r.class, "lane", lane.String(), "wait_ms", wait.Milliseconds())
				r.wait = wait
				return true
			}
		}
		if moved {
			a.log.Info("moving to the rung's next lane", "error_class", r.class, "lane", lane.String())
			a.meter.count("LaneMoves", map[string]string{"ErrorClass": string(r.class), "Lane": string(lane.Lane)})
		}
		moved = true
		if k+1 < len(plan) {
			lane.Timeout = a.laneTimeout(lane, plan[k+1])
		}
		r.rung = lane
		a.progress.Store(0)
		resp, err, timedOut := a.call(ctx, lane, in, a.awaiter(ctx, lane, r.paid))
		class, usage := model.Classify(err)
		if err == nil {
			usage = resp.Usage
		}
		// Priced at the tier that served the call: a priority call the
		// provider served (and billed) at standard saved nothing.
		r.rung = lane.Served(resp.Served)
		r.pay(usage, r.rung)
		a.untake(context.WithoutCancel(ctx), lane, in, resp, err)
		r.resp, r.err, r.class = resp, err, class
		if err == nil || ctx.Err() != nil {
			return true // answered, or the attempt itself is over
		}
		if timedOut {
			r.class = job.Timeout
		}
		if !timedOut && class != job.CapacityUnavailable {
			return false
		}
	}
	if !moved && r.err == nil {
		// Every lane of the plan was a batch lane the job could not
		// enter, and nothing was called: the attempt fails, or it would
		// read as answered with an empty result.
		r.err, r.class = errNoLaneInTime, job.DeadlineExceeded
	}
	return false
}

// laneTimeout is how long a call in lane may run when next is the lane
// the attempt moves on to: its own timeout, cut so that next's p99 still
// fits before the job's deadline. A slow lane whose call would leave no
// time for a faster one gives way to it while the deadline can be met.
func (a *attempt) laneTimeout(lane, next job.Rung) time.Duration {
	cut := a.j.Deadline.Sub(a.clock.Now()) - next.P99()
	if cut > 0 && cut < lane.Timeout {
		return cut
	}
	return lane.Timeout
}

// holdFor raises the attempt's hold to need (what it spent so far plus the
// next rung's worst case) before that rung is called, so a worker that
// dies during it leaves a hold covering what the providers may bill. It
// reports whether the rung may be called: a raise the record refuses (the
// budget moved, the lease was lost) ends the climb.
func (a *attempt) holdFor(ctx context.Context, need job.Nanocents) bool {
	if need <= a.held {
		return true
	}
	_, err := a.store.HoldMore(ctx, job.HoldMore{ID: a.j.ID, Owner: a.owner, Now: a.clock.Now(), Amount: need - a.held, Total: need})
	if err != nil {
		a.log.Info("no fallback: raising the attempt's hold for the next rung failed", "need_cents", need.String(), "err", err)
		a.holdUnsure = a.holdUnsure || job.ErrorCode(err) == job.CodeUnavailable
		return false
	}
	a.held = need
	return true
}

// confirmHold reads what the record holds for the attempt when a raise of
// its hold went unanswered (the write may have landed and its answer been
// lost): every cent held on the record while the attempt's lease is on it
// is the attempt's, and a settlement that returned less would leave a
// hold on a finished job for ever. The read is retried like the finishing
// writes; if it never answers, the settlement returns what the attempt
// knows it holds.
func (a *attempt) confirmHold(ctx context.Context) {
	if !a.holdUnsure {
		return
	}
	_ = retryWrite(ctx, a.rand, func() error {
		cur, err := a.store.Get(ctx, a.j.ID)
		if err == nil && cur.LeaseOwner == a.owner && cur.Held > a.held {
			a.log.Info("a raise of the hold whose answer was lost had landed", "held_cents", cur.Held.String())
			a.held = cur.Held
		}
		return err
	})
}
