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
// caps.record once it has ended and its outcome waits to be written.
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
	if err := a.queue.ChangeVisibility(ctx, a.m.ReceiptHandle, a.j.LeaseUntil.Sub(a.clock.Now())); err != nil {
		// Cancelled because the call already ended (a fast model): the
		// outcome decides the message, and the warning would be a log line
		// per job for nothing.
		if ctx.Err() == nil {
			a.log.Warn("hiding the message for the claim's lease failed", "err", err)
		}
	} else {
		hidden = a.j.LeaseUntil
	}
	a.m.renew.join()
	defer a.m.renew.leave()
	var pending *entry // the extension asked for and not yet answered
	var pendingUntil time.Time
	defer func() {
		if pending != nil {
			pending.drop()
		}
	}()
	t := time.NewTicker(a.timing.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := a.clock.Now()
		horizon := now.Add(a.timing.LeaseTTL)
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
			pending, pendingUntil = a.m.renew.ask(a.m.ReceiptHandle, horizon.Sub(now)), horizon
		}
		_, err := a.store.Heartbeat(ctx, job.Heartbeat{ID: a.j.ID, Owner: a.owner, Now: now, LeaseUntil: horizon,
			Progress: math.Float64frombits(a.progress.Load())})
		switch job.ErrorCode(err) {
		case "":
			a.guard.extend(horizon)
		case job.CodeConflict, job.CodeNotFound:
			a.stopCall(errLeaseLost)
			return
		default:
			// The guard stops the call before the last lease we hold runs
			// out if no later renewal succeeds. A write cancelled because
			// the outcome is recorded is no failure: warned of, it filled
			// loaded test runs' logs with false leads.
			if ctx.Err() == nil {
				a.log.Warn("heartbeat: extending the lease failed", "err", err)
			}
		}
	}
}

// leaseCaps are how far an attempt's lease may reach: call while its
// model call runs (the attempt's deadline: a worker whose call overran it
// gives the job up), record once the call has ended and the outcome is
// being written (the end of the finish context: until then this worker
// may still record the paid answer, so no one else should claim it).
type leaseCaps struct{ call, record time.Time }

func (c leaseCaps) at(call context.Context) time.Time {
	if call.Err() != nil && c.record.After(c.call) {
		return c.record
	}
	return c.call
}

// startHeartbeat starts the attempt's heartbeat (call is the model call's
// context) and sets beatsDone. It runs until the outcome is recorded, not
// until the call ends: the answer is paid for, and while the store refuses
// the write that records it, the lease and the message must stay ours.
func (a *attempt) startHeartbeat(ctx, call context.Context, route job.Route) {
	beatCtx, stopBeats := context.WithCancel(ctx)
	beating := make(chan struct{})
	a.beatsDone = sync.OnceFunc(func() { stopBeats(); a.awaitHeartbeat(beating) })
	caps := leaseCaps{call: a.start.Add(route.Timeout() + a.timing.AttemptMargin)}
	caps.record = caps.call
	if dl, ok := ctx.Deadline(); ok {
		caps.record = dl.Add(-a.timing.finishMargin())
	}
	go func() {
		defer close(beating)
		a.heartbeat(beatCtx, call, caps)
	}()
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
