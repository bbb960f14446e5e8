package worker

import (
	"context"
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
}

// pay adds what a call with usage u cost at price p to what the climb paid.
func (r *climbed) pay(u model.Usage, p job.Price) {
	r.paid.Cost += u.Cost(p)
	r.paid.Estimated = r.paid.Estimated || u.Estimated
}

// climb calls the route's rungs in order until one answers, one fails with
// a class the route does not fall back on, the attempt's own context ends,
// or the next rung's worst case no longer fits in avail.
func (a *attempt) climb(ctx context.Context, route job.Route, in job.Input, avail job.Nanocents) climbed {
	var r climbed
	for i, rung := range route.Rungs {
		if ctx.Err() != nil {
			// The attempt ended before this rung (a lease that could not be
			// renewed even before the first call): never start a call.
			if i == 0 {
				r.err, r.class = context.Cause(ctx), job.Timeout
			}
			return r
		}
		if i > 0 {
			wc := rung.WorstCase(in)
			if !job.Covers(avail-r.paid.Cost, wc) {
				a.log.Info("no fallback: the next rung's worst case does not fit the budget", "error_class", r.class, "rung", i, "worst_case_cents", wc.String())
				return r
			}
			if !a.holdFor(ctx, r.paid.Cost+wc) {
				return r
			}
			// No wait in place here: the route's timeout and the lease's
			// cap are already running.
			if wait, _ := a.take(ctx, rung, in, 0); wait > 0 {
				a.log.Info("no fallback: the next rung's provider is rate limited", "error_class", r.class, "rung", i, "wait_ms", wait.Milliseconds())
				return r
			}
			a.log.Info("falling back to the next rung", "error_class", r.class, "rung", i, "provider", rung.Provider, "model", rung.Model)
			a.meter.count("Fallbacks", map[string]string{"ErrorClass": string(r.class)})
		}
		r.rung, r.tried = rung, i+1
		a.progress.Store(0)
		resp, err, timedOut := a.call(ctx, rung, in, a.awaiter(ctx, rung, r.paid))
		class, usage := model.Classify(err)
		if err == nil {
			usage = resp.Usage
		}
		r.pay(usage, rung.Price)
		a.untake(context.WithoutCancel(ctx), rung, in, resp, err)
		r.resp, r.err, r.class = resp, err, class
		if err == nil || ctx.Err() != nil {
			return r // answered, or the attempt itself is over
		}
		if timedOut {
			r.class = job.Timeout
		}
		if !route.FallsBackOn(r.class) {
			return r
		}
	}
	return r
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
