package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/parking"
)

// attempt is one claimed attempt, from its claim to its recorded outcome:
// the record as the claim left it (Attempts counts this attempt, Held
// holds its reserve), the lease token, and when it started (its run time
// is added to the record). Its methods are the attempt's rules in the order
// they run, so an attempt's budget and lease rules read in one place.
type attempt struct {
	w     *Worker
	m     events.SQSMessage
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
	// renew sends the heartbeat's visibility extensions with those of the
	// invocation's other attempts.
	renew *renewals

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

// charge is what an attempt's calls cost, and whether that includes an
// estimate for a call whose usage the provider never reported.
type charge struct {
	cost      job.Nanocents
	estimated bool
}

func (c *charge) add(u model.Usage, p job.Price) {
	c.cost += u.Cost(p)
	c.estimated = c.estimated || u.Estimated
}

// run climbs the route's rungs in order, falling back on the classes the
// route names, under one lease that covers them all, and records the
// outcome.
func (a *attempt) run(ctx context.Context) outcome {
	var in job.Input
	if err := json.Unmarshal(a.j.Input, &in); err != nil {
		return a.end(ctx, job.InvalidRequest, "stored input is not valid", charge{})
	}
	route, ok := a.w.cfg.Routes[a.j.Model]
	if !ok || len(route.Rungs) == 0 {
		return a.retryOrEnd(ctx, job.Internal, "no route for model "+a.j.Model, charge{}, 0)
	}
	// What this attempt may spend: the budget left once its own hold is
	// set aside (the claim checked the record's Reserve; the route's price
	// may have changed since the job was created).
	avail := a.j.LeftAfter(0)
	first := route.Reserve(in) // the first rung's worst case, at today's prices
	next := max(first, a.j.Reserve)
	if !job.Covers(avail, first) {
		return a.end(ctx, job.BudgetExhausted, "remaining budget below the first rung's worst case "+first.String()+" cents", charge{})
	}

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
	a.guard = newLeaseGuard(a.w.cfg.Clock, a.w.cfg.Timing.leaseMargin(), stopCall)
	a.guard.extend(a.j.LeaseUntil)
	defer a.guard.disarm()

	a.startHeartbeat(ctx, timed, route)
	defer a.beatsDone()

	began := time.Now()
	r := a.climb(timed, route, in, avail)
	why := context.Cause(timed)
	stopCall(nil)
	a.guard.disarm() // nothing runs that a lapsing lease must stop
	elapsed := time.Since(began)
	a.w.cfg.Metrics.Emit("AttemptDuration", float64(elapsed.Milliseconds()), "Milliseconds", nil)

	ctx, cancelWrites := a.w.finishContext(ctx)
	defer cancelWrites()
	a.confirmHold(ctx)
	a.w.spent(r.paid.cost)
	if r.err == nil && !errors.Is(why, errLeaseLost) {
		a.log.Info("attempt succeeded", "model", r.rung.Provider+"/"+r.resp.Model, "rungs", r.tried, "cost_cents", r.paid.cost.String(),
			"cost_estimated", r.paid.estimated, "duration_ms", elapsed.Milliseconds(),
			"input_tokens", r.resp.Usage.InputTokens, "output_tokens", r.resp.Usage.OutputTokens)
		return a.succeed(ctx, r)
	}

	if errors.Is(why, errLeaseLost) {
		a.log.Info("attempt stopped: lease lost or job cancelled", "cost_cents", r.paid.cost.String(), "duration_ms", elapsed.Milliseconds())
		a.w.count("LeasesLost", nil)
		class := r.class
		if r.err == nil {
			class = job.Cancelled // a result that arrived after the lease was lost
		}
		return a.settleLost(ctx, class, r.paid)
	}
	class, detail := failureOf(r, why)
	a.log.Info("attempt failed", "error_class", class, "rungs", r.tried, "cost_cents", r.paid.cost.String(),
		"cost_estimated", r.paid.estimated, "duration_ms", elapsed.Milliseconds())
	return a.retryOrEnd(ctx, class, detail, r.paid, next)
}

// startHeartbeat starts the attempt's heartbeat (call is the model call's
// context) and sets beatsDone. It runs until the outcome is recorded, not
// until the call ends: the answer is paid for, and while the store refuses
// the write that records it, the lease and the message must stay ours.
func (a *attempt) startHeartbeat(ctx, call context.Context, route job.Route) {
	beatCtx, stopBeats := context.WithCancel(ctx)
	beating := make(chan struct{})
	a.beatsDone = sync.OnceFunc(func() { stopBeats(); a.awaitHeartbeat(beating) })
	caps := leaseCaps{call: a.start.Add(route.Timeout() + a.w.cfg.Timing.AttemptMargin)}
	caps.settle = caps.call
	if dl, ok := ctx.Deadline(); ok {
		caps.settle = dl.Add(-a.w.cfg.Timing.finishMargin())
	}
	go func() {
		defer close(beating)
		a.heartbeat(beatCtx, call, caps)
	}()
}

// failureOf names what ended a failed climb: why, the cause the call was
// stopped with, wins over the class of the error the call saw (a call cut
// by the route's timeout sees a cancelled context, not a timeout).
func failureOf(r climbed, why error) (job.ErrorClass, string) {
	class, detail := r.class, detailOf(r.err)
	switch {
	case errors.Is(why, errLeaseExpiring):
		class, detail = job.Timeout, "the lease could not be renewed"
	case errors.Is(why, errHeartbeatPanic):
		class, detail = job.Internal, "the heartbeat failed"
	case errors.Is(why, errJobDeadline):
		class, detail = job.DeadlineExceeded, "the job's deadline passed during the call"
	case errors.Is(why, errLambdaDeadline):
		class, detail = job.Timeout, "stopped before the function's deadline"
	case errors.Is(why, errRouteTimeout):
		class, detail = job.Timeout, "the model route's timeout passed"
	case class == job.Cancelled:
		// Only a lost lease may cancel a call; any other end of the
		// invocation's context (shutdown) is a timeout, and retried.
		class, detail = job.Timeout, "the invocation ended during the call"
	}
	return class, detail
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
		if left := time.Until(dl) - a.w.cfg.Timing.LambdaMargin; left < limit {
			limit, cause = left, errLambdaDeadline
		}
	}
	return limit, cause
}

// heartbeatGrace bounds how long the outcome waits for a heartbeat still
// in flight when the call ends. Its AWS calls are cancelled at that moment
// and each has a deadline of its own, so the wait is normally a few
// milliseconds; a call that ignores both must not keep the outcome, and
// the money it records, from being written.
const heartbeatGrace = time.Second

// awaitHeartbeat waits, at most heartbeatGrace, for the heartbeat to stop,
// so that no renewal moves the message after the outcome has set it.
func (a *attempt) awaitHeartbeat(beating <-chan struct{}) {
	t := time.NewTimer(heartbeatGrace)
	defer t.Stop()
	select {
	case <-beating:
	case <-t.C:
		a.log.Warn("a heartbeat call is still in flight; recording the outcome without waiting for it")
	}
}

// climbed is how an attempt's climb down the route ended: the response of
// the rung that answered, or the error and class of the last rung tried,
// and what every rung tried cost together.
type climbed struct {
	resp  model.Response
	err   error
	class job.ErrorClass
	rung  job.Rung
	tried int
	paid  charge
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
			if !job.Covers(avail-r.paid.cost, wc) {
				a.log.Info("no fallback: the next rung's worst case does not fit the budget", "error_class", r.class, "rung", i, "worst_case_cents", wc.String())
				return r
			}
			if !a.holdFor(ctx, r.paid.cost+wc) {
				return r
			}
			a.log.Info("falling back to the next rung", "error_class", r.class, "rung", i, "provider", rung.Provider, "model", rung.Model)
			a.w.count("Fallbacks", map[string]string{"ErrorClass": string(r.class)})
		}
		r.rung, r.tried = rung, i+1
		a.progress.Store(0)
		resp, err, timedOut := a.call(ctx, rung, in)
		class, usage := model.Classify(err)
		if err == nil {
			usage = resp.Usage
		}
		r.paid.add(usage, rung.Price)
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
	_, err := a.w.cfg.Store.HoldMore(ctx, job.HoldMore{ID: a.j.ID, Owner: a.owner, Now: a.w.cfg.Clock.Now(), Amount: need - a.held, Total: need})
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
	_ = retryWrite(ctx, a.w.cfg.Rand, func() error {
		cur, err := a.w.cfg.Store.Get(ctx, a.j.ID)
		if err == nil && cur.LeaseOwner == a.owner && cur.Held > a.held {
			a.log.Info("a raise of the hold whose answer was lost had landed", "held_cents", cur.Held.String())
			a.held = cur.Held
		}
		return err
	})
}

// call runs one rung under its own timeout and reports whether that
// timeout (not the attempt's) ended it.
func (a *attempt) call(ctx context.Context, rung job.Rung, in job.Input) (model.Response, error, bool) {
	p, ok := a.w.cfg.Providers[rung.Provider]
	if !ok {
		return model.Response{}, model.Errorf(job.Internal, "no provider %q", rung.Provider), false
	}
	rctx, cancel := context.WithTimeoutCause(ctx, rung.Timeout, errRungTimeout)
	defer cancel()
	out := rung.OutputCap(in)
	resp, err := p.Generate(rctx, model.Request{
		JobID: a.j.ID, Model: rung.Model, Messages: in.Messages, MaxTokens: out, Temperature: in.Temperature,
		Progress: func(tokens int) {
			v := math.Min(float64(tokens)/float64(max(out, 1)), 1)
			a.progress.Store(math.Float64bits(v))
		},
	})
	if resp.Model == "" {
		resp.Model = rung.Model
	}
	return resp, err, err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), errRungTimeout)
}

// record writes o until it lands, is refused, or ctx (the finish context)
// ends, with the heartbeat renewing the lease and the message meanwhile;
// then it stops the heartbeat, so that no renewal moves the message after
// the outcome decided it. The first write the store fails parks o in the
// lot as well, beside the retries (see park): an answer whose write never
// lands is settled from there by the next worker, not generated again.
func (a *attempt) record(ctx context.Context, o parking.Outcome) error {
	var p *parked
	err := retryWrite(ctx, a.w.cfg.Rand, func() error {
		_, err := o.Apply(ctx, a.w.cfg.Store)
		if job.ErrorCode(err) == job.CodeUnavailable && p == nil && a.w.cfg.Parking != nil {
			p = a.park(ctx, o)
		}
		return err
	})
	if p != nil {
		err = p.settle(ctx, err, a.log)
	}
	if a.beatsDone != nil {
		a.beatsDone()
	}
	return err
}

// succeed records the answer and what the attempt cost.
func (a *attempt) succeed(ctx context.Context, r climbed) outcome {
	now := a.w.stamp(a.j)
	result, _ := job.EncodeJSON(r.resp)
	err := a.record(ctx, parking.Outcome{Succeed: &job.Succeed{ID: a.j.ID, Owner: a.owner, Now: now, Cost: r.paid.cost, Estimated: r.paid.estimated,
		Held: a.held, Ran: now.Sub(a.start), Result: result, Model: r.rung.Provider + "/" + r.resp.Model,
		ExpiresAt: a.w.cfg.Retention.ExpiresAt(job.Succeeded, now)}})
	if job.ErrorCode(err) == job.CodeTooLarge {
		// The record cannot hold this result: end the job for good,
		// keeping what the call cost, rather than generate it again.
		return a.end(ctx, job.Internal, "the result is too large to store", r.paid)
	}
	if err == nil {
		a.w.count("JobsSucceeded", nil)
	}
	return a.w.outcomeOf(err, a.log)
}

// settleLost records what an attempt cost after its lease was lost or the
// job cancelled: the record is no longer ours, so the release is refused,
// which still settles the attempt, and says what became of the job.
func (a *attempt) settleLost(ctx context.Context, class job.ErrorClass, paid charge) outcome {
	now := a.w.stamp(a.j)
	err := a.record(ctx, parking.Outcome{Release: &job.Release{ID: a.j.ID, Owner: a.owner, Now: now, Cost: paid.cost, Estimated: paid.estimated,
		Held: a.held, Ran: now.Sub(a.start), Class: class}})
	return a.w.outcomeOf(err, a.log)
}

// retryOrEnd records an attempt that ended with class: released for a retry
// after a backoff, or ended for good (retryOrEnd or abandoned). next is the
// worst case the next attempt would need.
func (a *attempt) retryOrEnd(ctx context.Context, class job.ErrorClass, detail string, paid charge, next job.Nanocents) outcome {
	now := a.w.stamp(a.j)
	backoff := job.Backoff(a.j.Attempts, a.w.cfg.Timing.BackoffBase, a.w.cfg.Timing.BackoffMax, a.w.cfg.Rand())
	d := job.AfterError(a.j, now, class, paid.cost, backoff, next)
	if d.Action == job.Stop {
		return a.end(ctx, d.Class, detail, paid)
	}
	err := a.record(ctx, parking.Outcome{Release: &job.Release{ID: a.j.ID, Owner: a.owner, Now: now, Cost: paid.cost, Estimated: paid.estimated,
		Held: a.held, Ran: now.Sub(a.start), Class: class, Detail: detail, NotBefore: now.Add(d.Delay)}})
	if err != nil {
		return a.w.outcomeOf(err, a.log)
	}
	if err := a.w.cfg.Queue.ChangeVisibility(ctx, a.m.ReceiptHandle, d.Delay); err != nil {
		a.log.Warn("setting the retry backoff failed; the message returns at its current visibility", "err", err)
	}
	a.log.Info("job released for retry", "error_class", class, "backoff_ms", d.Delay.Milliseconds())
	a.w.count("JobsRetried", map[string]string{"ErrorClass": string(class)})
	return outcomeKeep
}

// end ends the held job for good with class.
func (a *attempt) end(ctx context.Context, class job.ErrorClass, detail string, paid charge) outcome {
	now := a.w.stamp(a.j)
	err := a.record(ctx, parking.Outcome{End: &job.End{ID: a.j.ID, Owner: a.owner, Now: now, Cost: paid.cost, Estimated: paid.estimated,
		Held: a.held, Ran: now.Sub(a.start), Class: class, Detail: detail, ExpiresAt: a.w.cfg.Retention.ExpiresAt(class.FinalState(), now)}})
	a.log.Info("job ended", "error_class", class, "state", class.FinalState())
	if err == nil {
		a.w.countEnded(class)
	}
	return a.w.outcomeOf(err, a.log)
}

func detailOf(err error) string {
	var me *model.Error
	if errors.As(err, &me) {
		d := me.Detail
		if len(d) > 200 {
			d = d[:200]
		}
		return d
	}
	return ""
}
