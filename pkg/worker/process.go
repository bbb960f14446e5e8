package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

type outcome int

const (
	// outcomeDelete lets Lambda delete the message: the job needs nothing
	// more from it.
	outcomeDelete outcome = iota
	// outcomeKeep reports the message as a batch item failure: it comes back
	// when its visibility ends, for a job the record says is alive (a retry
	// after its backoff, a job another worker holds).
	outcomeKeep
	// outcomeTrouble keeps the message too, because something failed (the
	// store or the queue, a panic): nothing says the job is alive, so a
	// message kept this way until its receive limit is dead-lettered.
	outcomeTrouble
)

// claimTries bounds how often one message re-decides after a claim or an
// end was refused because the record moved underneath it, or a dead
// attempt was written off.
const claimTries = 4

func (w *Worker) process(ctx context.Context, m events.SQSMessage, renew *renewals) outcome {
	log := w.cfg.Logger.With("message_id", m.MessageId)
	msg, ok := job.ParseQueueMessage(m.Body)
	if !ok {
		return w.poison(ctx, m, "unparseable", log)
	}
	if !job.ValidID(msg.JobID) {
		return w.poison(ctx, m, "invalid_job_id", log)
	}
	return w.claim(ctx, m, msg.JobID, log.With("job_id", msg.JobID), renew)
}

// poison sends a message that can never be processed to the dead letter
// queue itself, with a reason, instead of letting it loop until
// maxReceiveCount.
func (w *Worker) poison(ctx context.Context, m events.SQSMessage, reason string, log *slog.Logger) outcome {
	if err := w.cfg.Queue.DeadLetter(ctx, m.Body, reason); err != nil {
		log.Error("dead-lettering a poison message failed", "reason", reason, "err", err)
		return outcomeTrouble
	}
	log.Warn("poison message dead-lettered", "reason", reason)
	w.count("PoisonMessages", nil)
	return outcomeDelete
}

// claim takes the job before any model call and, when the claim is
// refused, decides from the record what the message still means. renew
// carries the heartbeat's extensions of the message with its neighbours'.
func (w *Worker) claim(ctx context.Context, m events.SQSMessage, id string, log *slog.Logger, renew *renewals) outcome {
	for range claimTries {
		now := w.cfg.Clock.Now()
		owner := w.cfg.NewOwner()
		// won runs the attempt this claim made ours.
		won := func(j job.Job) outcome {
			a := &attempt{w: w, m: m, j: j, owner: owner, start: now, log: log.With("attempt", j.Attempts), held: j.Reserve, renew: renew}
			return a.run(ctx)
		}
		j, err := w.cfg.Store.Claim(ctx, job.Claim{ID: id, Owner: owner, Now: now, LeaseUntil: now.Add(w.cfg.Timing.LeaseTTL)})
		switch job.ErrorCode(err) {
		case "":
			return won(j)
		case job.CodeNotFound:
			return w.poison(ctx, m, "job_not_found", log)
		case job.CodeConflict:
		default:
			// The claim may have been applied and only its answer lost
			// (the SDK's retries ran out): then the job, and the hold the
			// claim took, are ours, and leaving them would leak both.
			if cur, gerr := w.cfg.Store.Get(ctx, id); gerr == nil && cur.State == job.Running && cur.LeaseOwner == owner {
				return won(cur)
			}
			log.Error("claim failed", "err", err)
			return outcomeTrouble
		}
		cur, _ := job.ConflictJob(err)
		if cur.State == job.Running && cur.LeaseOwner == owner {
			// Our own claim was applied and its answer lost (the SDK retried
			// it and the retry was refused): the job is ours.
			return won(cur)
		}
		d := job.WhyRefused(cur, now)
		switch d.Action {
		case job.Recover:
			if o, again := w.recover(ctx, cur, now, log); !again {
				return o
			}
		case job.Drop:
			log.Info("duplicate delivery absorbed by the claim", "state", cur.State)
			w.count("DuplicatesAbsorbed", nil)
			return outcomeDelete
		case job.Wait:
			// Another worker holds a live lease, or the job waits out a
			// retry backoff: hide the message until that ends, so it
			// returns only if the owner dies or the backoff is over.
			if err := w.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, d.Delay+100*time.Millisecond); err != nil {
				log.Warn("hiding a message behind a lease or backoff failed", "err", err)
			}
			log.Info("job held by another worker or backing off", "wait", d.Delay.String())
			w.count("DuplicatesAbsorbed", nil)
			return outcomeKeep
		case job.Stop:
			_, err := w.cfg.Store.End(ctx, job.End{ID: id, Now: now, Class: d.Class,
				ExpiresAt: w.cfg.Retention.ExpiresAt(d.Class.FinalState(), now)})
			switch job.ErrorCode(err) {
			case "":
				log.Info("job ended before an attempt", "error_class", d.Class)
				w.countEnded(d.Class)
				return outcomeDelete
			case job.CodeConflict:
				continue
			default:
				log.Error("ending a job failed", "err", err)
				return outcomeTrouble
			}
		}
	}
	return outcomeTrouble
}

// recover settles the dead attempt cur carries: its lease ran out
// unrenewed, so its worker died or is cut off from the store. Its parked
// outcome, if it left one, is recorded (the answer it paid for, at its
// exact cost); otherwise it is written off (job.WriteOff: what it held
// becomes cost, as an estimate). It reports whether the message should
// decide again (the settlement landed, or the record moved) and, if not,
// what becomes of the message.
func (w *Worker) recover(ctx context.Context, cur job.Job, now time.Time, log *slog.Logger) (outcome, bool) {
	how, j, err := parking.Settle(ctx, w.cfg.Store, w.cfg.Parking, cur, now)
	switch code := job.ErrorCode(err); {
	case code == "" && how == parking.Unparked:
		log.Info("a dead attempt's parked outcome was recorded", "dead_owner_attempt", cur.Attempts, "state", j.State)
		w.count("OutcomesUnparked", nil)
		return outcomeKeep, true
	case code == "":
		log.Warn("a dead attempt was written off: its hold is charged as an estimate",
			"dead_owner_attempt", cur.Attempts, "charged_cents", cur.Held.String(), "state", j.State)
		w.count("AttemptsWrittenOff", nil)
		return outcomeKeep, true
	case code == job.CodeConflict:
		return outcomeKeep, true
	case code == job.CodeNotFound:
		return outcomeDelete, false
	}
	log.Error("settling a dead attempt failed", "err", err)
	return outcomeTrouble, false
}

// outcomeOf turns the answer of a finishing write into what happens to the
// message. A refused finish still recorded the cost (the store guarantees
// it); the message goes if the job is over, and stays otherwise.
func (w *Worker) outcomeOf(err error, log *slog.Logger) outcome {
	if errors.Is(err, errParked) {
		// The message, hidden by the heartbeat until the lease's end,
		// comes back then for the worker that settles the parked outcome.
		w.count("OutcomesParked", nil)
		return outcomeKeep
	}
	switch job.ErrorCode(err) {
	case "":
		return outcomeDelete
	case job.CodeNotFound:
		return outcomeDelete
	case job.CodeConflict:
		cur, _ := job.ConflictJob(err)
		log.Info("result discarded: lease lost or job cancelled; cost kept", "state", cur.State)
		if cur.State.Terminal() {
			return outcomeDelete
		}
		return outcomeKeep
	}
	log.Error("recording the outcome failed", "err", err)
	return outcomeTrouble
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

// retryWait is the wait after the i-th failed try (from 0): a random part
// of a ceiling that doubles from writeRetryBase to writeRetryMax.
func retryWait(i int, rnd func() float64) time.Duration {
	ceiling := min(writeRetryBase<<min(i, 16), writeRetryMax)
	return time.Duration(float64(ceiling) * (0.1 + 0.9*rnd()))
}

const (
	writeRetryBase = 100 * time.Millisecond
	writeRetryMax  = 2 * time.Second
)

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

func (w *Worker) finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return detached(ctx, w.cfg.Timing.finishMargin())
}

// detached is ctx without its cancellation, ending margin before ctx's
// deadline (finishTimeout from now if ctx has none).
func detached(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), dl.Add(-margin))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}

var (
	errLeaseLost      = errors.New("lease lost or job cancelled")
	errLeaseExpiring  = errors.New("lease about to expire unrenewed")
	errHeartbeatPanic = errors.New("the heartbeat panicked")
	errRouteTimeout   = errors.New("model route timeout")
	errRungTimeout    = errors.New("model rung timeout")
	errJobDeadline    = errors.New("job deadline")
	errLambdaDeadline = errors.New("function deadline")
)
