package worker

import (
	"context"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// finishAt is the attempt's finish at now (a stamp), settling what its
// calls cost (paid, from the climb, with its last call's lane), everything
// it holds, how long it ran, and which attempt it is. Every finishing
// write the attempt makes is built from here.
func (a *attempt) finishAt(paid job.Settlement, now time.Time) finish.Of {
	paid.Held, paid.Ran, paid.Attempt = a.held, now.Sub(a.start), a.j.Attempts
	a.admission.paid, a.admission.paidKnown = paid.Cost, true // the spend holds settle at it (docs/spend.md)
	return finish.Of{Job: a.j, Owner: a.owner, Now: now, Settlement: paid, Retention: a.retention}
}

// finish records v, what happened to the attempt, with the one finishing
// write it asks for: run's only exit. Once the call went, the writes run
// on the finish context, and the hold the record has is confirmed first.
func (a *attempt) finish(ctx context.Context, v verdict) outcome {
	if v.called {
		var cancel context.CancelFunc
		ctx, cancel = a.finishContext(ctx)
		defer cancel()
		a.confirmHold(ctx)
	}
	// A generation that goes on without the attempt may spend all it
	// holds: its spend holds are settled as spent (docs/spend.md).
	a.admission.paidAll = v.write == verdictDetach || v.write == verdictEnlisted
	a.admission.paidKnown = !v.called
	switch v.write {
	case verdictRetry:
		return a.retryOrEnd(ctx, v.fail)
	case verdictEnd:
		return a.end(ctx, v.class, v.detail, job.Settlement{})
	case verdictDefer:
		return a.deferFor(ctx, v.wait, v.class, v.detail)
	case verdictLost:
		return a.releaseLost(ctx, v.class, v.r.paid)
	case verdictSucceed:
		return a.succeed(ctx, v.r, v.result)
	case verdictDetach:
		return a.detach(ctx, v.r)
	}
	return outcomeDelete // enlisted: the batch lane holds the job
}

// record writes o until it lands, is refused, or ctx (the finish context)
// ends, with the heartbeat renewing the lease and the message meanwhile;
// then it stops the heartbeat, so that no renewal moves the message after
// the outcome decided it. The first write the store fails parks o in the
// lot as well, beside the retries (parked.start): an answer whose write never
// lands is settled from there by the next worker, not generated again.
func (a *attempt) record(ctx context.Context, o finish.Outcome) error {
	var p *parked
	err := retryWrite(ctx, a.rand, func() error {
		_, err := o.Apply(ctx, a.store)
		if job.ErrorCode(err) == job.CodeUnavailable && p == nil && a.lot != nil {
			p = &parked{lot: a.lot, key: parking.Key(a.j.ID, a.owner)}
			p.start(ctx, o, a.timing.parkHedge(), a.rand)
		}
		return err
	})
	if p != nil {
		err = p.close(ctx, err, a.log)
	}
	if err != nil && job.ErrorCode(err) != job.CodeConflict {
		// The record may yet charge the whole hold (a write-off): the
		// spend holds count it all too, never less (docs/spend.md). A
		// claim that promised to hold first leaves them for the write-off
		// to find: settled now, they would read as never held, and the
		// write-off would charge nothing for a call that was made.
		if a.j.SpendFirst != "" {
			a.admission.paidKnown = false
		} else {
			a.admission.paidAll = true
		}
	}
	if a.beatsDone != nil {
		a.beatsDone()
	}
	return err
}

// succeed records the answer (result, encoded by verdictOf) and what the
// attempt cost: inline when it is small, else put in the payload store
// first and recorded by its ref (docs/payloads.md, "Answers"). A small
// answer the record still has no room for is moved out the same way; an
// answer is never refused for its size.
func (a *attempt) succeed(ctx context.Context, r climbed, result []byte) outcome {
	f := a.finishAt(r.paid, a.stamp())
	inline := len(result) <= finish.MaxInlineResult
	o, err := a.succeedBy(ctx, f, r, result, inline)
	if err == nil {
		err = a.record(ctx, o)
		if job.ErrorCode(err) == job.CodeTooLarge && inline {
			if o, err = a.succeedBy(ctx, f, r, result, false); err == nil {
				err = a.record(ctx, o)
			}
		}
	}
	if err != nil && o.Succeed == nil || job.ErrorCode(err) == job.CodeTooLarge {
		// Never put (the store refused it), or refused by the record
		// even by ref: the answer is lost, the cost is recorded.
		return a.answerUnstored(ctx, r, err)
	}
	if err == nil {
		a.meter.count("JobsSucceeded", nil)
	}
	return a.outcomeOf(err)
}

// releaseLost records what an attempt cost after its lease was lost or the
// job cancelled: the record is no longer ours, so the release is refused,
// which still settles the attempt, and says what became of the job.
func (a *attempt) releaseLost(ctx context.Context, class job.ErrorClass, paid job.Settlement) outcome {
	now := a.stamp()
	err := a.record(ctx, a.finishAt(paid, now).Release(class, "", time.Time{}))
	return a.outcomeOf(err)
}

// outcomeOf turns the answer of a finishing write into what happens to the
// message. A refused finish still recorded the cost (the store guarantees
// it); the message goes if the job is over, and stays otherwise.
func (a *attempt) outcomeOf(err error) outcome {
	if errors.Is(err, errParked) {
		// The message, hidden by the heartbeat until the lease's end,
		// comes back then for the worker that settles the parked outcome.
		a.meter.count("OutcomesParked", nil)
		return outcomeKeep
	}
	switch job.ErrorCode(err) {
	case "":
		return outcomeDelete
	case job.CodeNotFound:
		return outcomeDelete
	case job.CodeConflict:
		cur, _ := job.ConflictJob(err)
		a.log.Info("result discarded: lease lost or job cancelled; cost kept", "state", cur.State)
		if cur.State.Terminal() {
			return outcomeDelete
		}
		return outcomeKeep
	}
	a.log.Error("recording the outcome failed", "err", err)
	return outcomeTrouble
}

// The writes that record an outcome run on a context detached from the
// invocation's cancellation (an attempt that was paid for must be recorded
// even while the invocation is torn down) and last until the finish
// margin before the invocation's deadline: the rest of the invocation is
// theirs, since once the call has answered nothing else is left to do.
// Without a deadline (a test harness) they get finishTimeout. The margin
// leaves room for the hand-off at the receive limit (a quarter of it
// before the deadline) and for Lambda to take the batch's answer; it is at
// most half the Lambda margin, so a call stopped at that margin still
// leaves its outcome a window.
const (
	maxFinishMargin = 2 * time.Second
	finishTimeout   = 5 * time.Second
)

func (t Timing) finishMargin() time.Duration  { return min(maxFinishMargin, t.LambdaMargin/2) }
func (t Timing) handOffMargin() time.Duration { return t.finishMargin() / 4 }

func (a *attempt) finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return detached(ctx, a.timing.finishMargin())
}

// detached is ctx without its cancellation, ending margin before ctx's
// deadline (finishTimeout from now if ctx has none).
func detached(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), dl.Add(-margin))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}

// retryOrEnd records an attempt that failed as f says: released for a
// retry after a backoff, or ended for good (failed or abandoned), as
// job.AfterError decides.
func (a *attempt) retryOrEnd(ctx context.Context, f failed) outcome {
	now := a.stamp()
	backoff := job.Backoff(a.j.Attempts, a.timing.BackoffBase, a.timing.BackoffMax, a.rand())
	d := job.AfterError(a.j, now, f.class, f.paid.Cost, job.NextAttempt{Backoff: backoff, Reserve: f.next})
	if d.Action == job.Stop {
		return a.end(ctx, d.Class, f.detail, f.paid)
	}
	err := a.record(ctx, a.finishAt(f.paid, now).Release(f.class, f.detail, now.Add(d.Delay)))
	if err != nil {
		return a.outcomeOf(err)
	}
	o := a.wait(ctx, a.m, a.j.Tenant, d.Delay, "a retry's backoff")
	a.log.Info("job released for retry", "error_class", f.class, "backoff_ms", d.Delay.Milliseconds())
	a.meter.count("JobsRetried", map[string]string{"ErrorClass": string(f.class)})
	return o
}

// retryWrite repeats a finishing write while the store is unavailable,
// until ctx ends: it carries money already spent, and an answer dropped
// is an answer generated (and billed) again. The waits between tries grow
// from writeRetryBase to writeRetryMax, each a random part of that ("full
// jitter"), so the workers a store outage hit together do not come back
// together.
func retryWrite(ctx context.Context, rnd func() float64, write func() error) error {
	var err error
	for i := 0; ; i++ {
		if err = write(); job.ErrorCode(err) != job.CodeUnavailable {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryWait(i, rnd)):
		}
	}
}

// end ends the held job for good with class, settling what the attempt's
// calls cost (paid); an end that landed is followed by the rules every
// finisher follows (finish.AfterEnd: the input's quarantine, the count).
func (a *attempt) end(ctx context.Context, class job.ErrorClass, detail string, paid job.Settlement) outcome {
	now := a.stamp()
	err := a.record(ctx, a.finishAt(paid, now).End(class, detail))
	a.log.Info("job ended", "error_class", class, "state", class.FinalState())
	if err == nil {
		a.afterEnd.Ended(ctx, a.j, class, now, a.log)
	}
	return a.outcomeOf(err)
}

// deferFor hands the claimed job back to the queue for wait (job.Defer):
// its attempt uncounted, its hold returned, its message hidden until then.
// A defer refused means the lease was lost (or this defer landed and its
// answer was lost): the job is not this attempt's either way.
func (a *attempt) deferFor(ctx context.Context, wait time.Duration, class job.ErrorClass, detail string) outcome {
	ctx, cancel := a.finishContext(ctx)
	defer cancel()
	now := a.stamp()
	d := job.Defer{ID: a.j.ID, Owner: a.owner, Now: now, Held: a.held, Class: class, Detail: detail, NotBefore: now.Add(wait)}
	err := retryWrite(ctx, a.rand, func() error {
		_, err := a.store.Defer(ctx, d)
		return err
	})
	if a.beatsDone != nil {
		// A renewal landing after the hiding below would undo it.
		a.beatsDone()
	}
	switch job.ErrorCode(err) {
	case "":
	case job.CodeConflict:
		a.log.Info("deferring the job was refused: the lease is no longer this attempt's", "err", err)
		return outcomeKeep
	default:
		a.log.Error("deferring the job failed; its lease runs out and its hold is written off", "err", err)
		return outcomeTrouble
	}
	o := a.wait(ctx, a.m, a.j.Tenant, wait, "a deferral")
	a.log.Info("job deferred: a wait, not an attempt", "error_class", class, "wait_ms", wait.Milliseconds(), "detail", detail)
	a.meter.count("JobsDeferred", nil)
	if class == job.SpendLimit {
		// Its own count, so an alarm can fire on it alone: JobsDeferred
		// carries no class.
		a.meter.count("SpendDeferred", nil)
	}
	return o
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
