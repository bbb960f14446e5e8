package worker

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// heartbeat renews the lease and the message's visibility every interval
// until the call ends, and stops the call the moment the record says the
// job is no longer ours (cancelled, or written off after a lost lease).
//
// It never decides when an unrenewed lease is about to run out: the lease
// guard does, on its own timer, because a renewal can hang (a half-open
// connection) or fail slowly, and a check made around it would run late.
// A panic here stops the call instead of killing the process (in Lambda
// that would return the whole batch and leak every neighbour's hold).
//
// The visibility extension goes out with the invocation's other attempts'
// in one batch request (renewals), and only when the message is not
// already hidden until the new lease horizon: once the horizon reaches the
// attempt's cap it stops moving, and the message, hidden until then by a
// renewal SQS accepted, needs nothing more (SQS counts a visibility
// timeout from when it receives the request, never before we computed
// the horizon, so the hiding we record is a lower bound). The lease write
// waits for no extension and is never skipped: besides the lease, it is
// how a cancel or a write-off reaches the call.
//
// It runs until ctx ends (the outcome is recorded), past the call's end:
// the lease reaches caps.call at most while the call runs, and
// caps.settle once it has ended and its outcome waits to be written.
func (a *attempt) heartbeat(ctx, call context.Context, caps leaseCaps) {
	defer func() {
		if v := recover(); v != nil {
			a.log.Error("panic in the heartbeat; the call is stopped", "panic", fmt.Sprint(v))
			a.stopCall(errHeartbeatPanic)
		}
	}()
	// The message first: the queue's visibility timeout is six function
	// timeouts long (so Lambda can retry throttled batches), and a worker
	// that died before its first renewal would otherwise leave the job for
	// that long instead of one lease. This call is the attempt's own, at
	// once: it does not wait for a round.
	var hidden time.Time // the message is hidden at least until then
	if err := a.w.cfg.Queue.ChangeVisibility(ctx, a.m.ReceiptHandle, a.j.LeaseUntil.Sub(a.w.cfg.Clock.Now())); err != nil {
		// Cancelled because the call already ended (a fast model): the
		// outcome decides the message, and the warning would be a log line
		// per job for nothing.
		if ctx.Err() == nil {
			a.log.Warn("hiding the message for the claim's lease failed", "err", err)
		}
	} else {
		hidden = a.j.LeaseUntil
	}
	a.renew.join()
	defer a.renew.leave()
	var pending *entry // the extension asked for and not yet answered
	var pendingUntil time.Time
	defer func() {
		if pending != nil {
			pending.drop()
		}
	}()
	t := time.NewTicker(a.w.cfg.Timing.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := a.w.cfg.Clock.Now()
		horizon := now.Add(a.w.cfg.Timing.LeaseTTL)
		if leaseCap := caps.at(call); horizon.After(leaseCap) {
			horizon = leaseCap
		}
		if pending != nil {
			if done, err := pending.answered(); done {
				if err != nil {
					a.log.Warn("heartbeat: extending message visibility failed", "err", err)
				} else {
					hidden = pendingUntil
				}
				pending = nil
			}
		}
		// One extension in flight at a time: a slow request is not
		// joined by another behind it.
		if pending == nil && horizon.After(hidden) {
			pending, pendingUntil = a.renew.ask(a.m.ReceiptHandle, horizon.Sub(now)), horizon
		}
		_, err := a.w.cfg.Store.Heartbeat(ctx, job.Heartbeat{ID: a.j.ID, Owner: a.owner, Now: now, LeaseUntil: horizon,
			Progress: math.Float64frombits(a.progress.Load())})
		switch job.ErrorCode(err) {
		case "":
			a.guard.extend(horizon)
		case job.CodeConflict, job.CodeNotFound:
			a.stopCall(errLeaseLost)
			return
		default:
			// The guard stops the call before the last lease we hold runs
			// out if no later renewal succeeds.
			a.log.Warn("heartbeat: extending the lease failed", "err", err)
		}
	}
}

// leaseCaps are how far an attempt's lease may reach: call while its
// model call runs (the attempt's deadline: a worker whose call overran it
// gives the job up), settle once the call has ended and the outcome is
// being written (the end of the finish context: until then this worker
// may still record the paid answer, so no one else should claim it).
type leaseCaps struct{ call, settle time.Time }

func (c leaseCaps) at(call context.Context) time.Time {
	if call.Err() != nil && c.settle.After(c.call) {
		return c.settle
	}
	return c.call
}

// leaseGuard stops an attempt's call a margin before the lease it holds
// ends, unless a renewal moved the lease on first. Past the lease's end
// another worker may claim the job, and two calls would be billed for one
// job; the margin covers the clock skew between workers and the time a
// call takes to stop.
type leaseGuard struct {
	clock  job.Clock
	margin time.Duration
	stop   context.CancelCauseFunc

	mu    sync.Mutex
	until time.Time
	timer *time.Timer
	done  bool
}

func newLeaseGuard(clock job.Clock, margin time.Duration, stop context.CancelCauseFunc) *leaseGuard {
	return &leaseGuard{clock: clock, margin: margin, stop: stop}
}

// extend moves the guard to a lease that now ends at until (never back).
// A lease already inside its margin stops the call at once, before the
// caller can start one.
func (g *leaseGuard) extend(until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done || !until.After(g.until) {
		return
	}
	g.until = until
	d := until.Sub(g.clock.Now()) - g.margin
	if g.timer != nil {
		g.timer.Stop()
	}
	if d <= 0 {
		g.stop(errLeaseExpiring)
		return
	}
	g.timer = time.AfterFunc(d, func() { g.stop(errLeaseExpiring) })
}

// disarm ends the guard with its attempt; later renewals change nothing.
func (g *leaseGuard) disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.timer != nil {
		g.timer.Stop()
	}
}
