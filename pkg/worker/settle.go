package worker

import (
	"context"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
)

// finishAt is the attempt's finish at now (a stamp), settling what its
// calls cost (paid, from the climb, with its last call's lane), everything
// it holds, how long it ran, and which attempt it is. Every finishing
// write the attempt makes is built from here.
func (a *attempt) finishAt(paid job.Settlement, now time.Time) finish.Of {
	paid.Held, paid.Ran, paid.Attempt = a.held, now.Sub(a.start), a.j.Attempts
	return finish.Of{Job: a.j, Owner: a.owner, Now: now, Settlement: paid, Retention: a.retention}
}

// record writes o until it lands, is refused, or ctx (the finish context)
// ends, with the heartbeat renewing the lease and the message meanwhile;
// then it stops the heartbeat, so that no renewal moves the message after
// the outcome decided it. The first write the store fails parks o in the
// lot as well, beside the retries (see park): an answer whose write never
// lands is settled from there by the next worker, not generated again.
func (a *attempt) record(ctx context.Context, o finish.Outcome) error {
	var p *parked
	err := retryWrite(ctx, a.rand, func() error {
		_, err := o.Apply(ctx, a.store)
		if job.ErrorCode(err) == job.CodeUnavailable && p == nil && a.lot != nil {
			p = a.park(ctx, o)
		}
		return err
	})
	if p != nil {
		err = p.close(ctx, err, a.log)
	}
	if a.beatsDone != nil {
		a.beatsDone()
	}
	return err
}

// succeed records the answer and what the attempt cost.
func (a *attempt) succeed(ctx context.Context, r climbed) outcome {
	now := a.stamp()
	result, _ := job.EncodeJSON(r.resp.Result())
	err := a.record(ctx, a.finishAt(r.paid, now).Succeed(result, r.rung.Provider+"/"+r.resp.Model, r.rung.Lane))
	if job.ErrorCode(err) == job.CodeTooLarge {
		// The record cannot hold this result: end the job for good,
		// keeping what the call cost, rather than generate it again.
		return a.end(ctx, job.Internal, "the result is too large to store", r.paid)
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
