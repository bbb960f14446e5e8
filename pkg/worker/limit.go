package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// handle processes one message and, when the worker would return it to
// the queue on the receive before its last, hands it off instead.
func (w *Worker) handle(ctx context.Context, m events.SQSMessage, renew *renewals) (o outcome) {
	log := w.cfg.Logger.With("message_id", m.MessageId)
	defer func() {
		if v := recover(); v != nil {
			// The message comes back: nothing was recorded for it.
			log.Error("panic while processing a message; it stays for redelivery", "panic", fmt.Sprint(v))
			o = outcomeTrouble
		}
		switch {
		case o != outcomeDelete && w.atReceiveLimit(m):
			o = w.handOff(ctx, m, o, log)
		case o == outcomeTrouble:
			w.backOff(ctx, m, log)
		}
	}()
	return w.process(ctx, m, renew)
}

// backOff brings a message whose handling failed (the store or the queue
// refused, a panic) back after a backoff that grows with its receives,
// instead of at the queue's visibility timeout (six function timeouts, 18
// minutes by default): a store outage delays a job by seconds, not by a
// quarter of an hour. If this call fails too, the visibility timeout is
// the bound, and the reconciler's (docs/architecture.md) for a job whose
// message is lost.
func (w *Worker) backOff(ctx context.Context, m events.SQSMessage, log *slog.Logger) {
	ctx, cancel := detached(ctx, w.cfg.Timing.handOffMargin())
	defer cancel()
	n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	d := job.Backoff(n, w.cfg.Timing.BackoffBase, w.cfg.Timing.BackoffMax, w.cfg.Rand())
	if err := w.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, d); err != nil {
		log.Warn("bringing a failed message back early failed; it returns at its visibility timeout", "err", err)
	}
}

// atReceiveLimit reports whether m was received ReceiveLimit-1 times: if
// it goes back now, its next receive is its last, and SQS moves it to the
// dead letter queue after that without asking anyone. One receive of room
// lets a hand-off that fails try again.
func (w *Worker) atReceiveLimit(m events.SQSMessage) bool {
	n, err := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	return err == nil && w.cfg.ReceiveLimit > 1 && n >= w.cfg.ReceiveLimit-1
}

// handOff disposes of a message that would otherwise reach the dead letter
// queue by redrive, which counts in no metric a worker can see and leaves
// the job's record saying nothing:
//   - the job is alive (a retry waits out its backoff, another worker
//     holds it): a fresh message stands in for this one, delayed until
//     the job needs it, and this one is deleted; its receive count starts
//     again, so long-held and long-backing-off jobs never reach the DLQ;
//   - anything else (the store or queue failing, a panic): the worker
//     dead-letters the message itself with reason receive_limit (a counted
//     send the DLQ alarm sees) and marks a job nobody holds failed with
//     class dead_lettered, so its owner and the failure index see it.
//
// If the hand-off itself fails, the message goes back: its last receive
// is the next try, and the reconciler marks the job if redrive wins.
func (w *Worker) handOff(ctx context.Context, m events.SQSMessage, o outcome, log *slog.Logger) outcome {
	ctx, cancel := detached(ctx, w.cfg.Timing.handOffMargin())
	defer cancel()
	msg, _ := job.ParseQueueMessage(m.Body)
	if o == outcomeKeep && job.ValidID(msg.JobID) {
		delay := w.pending(ctx, msg.JobID)
		if err := w.cfg.Queue.SendAfter(ctx, msg.JobID, delay); err != nil {
			log.Warn("renewing a message at its receive limit failed; it goes back", "err", err)
			return o
		}
		log.Info("message renewed at its receive limit", "job_id", msg.JobID, "delay_ms", delay.Milliseconds())
		w.count("MessagesRenewed", nil)
		return outcomeDelete
	}
	if err := w.cfg.Queue.DeadLetter(ctx, m.Body, "receive_limit"); err != nil {
		log.Warn("dead-lettering a message at its receive limit failed; it goes back", "err", err)
		return o
	}
	log.Warn("message dead-lettered at its receive limit", "job_id", msg.JobID)
	w.count("MessagesDeadLettered", map[string]string{"Reason": "receive_limit"})
	if job.ValidID(msg.JobID) {
		w.markDeadLettered(ctx, msg.JobID, log)
	}
	return outcomeDelete
}

// markDeadLettered ends a job nobody holds with class dead_lettered,
// writing off first a dead attempt the record still carries (its hold
// becomes cost; see recover).
func (w *Worker) markDeadLettered(ctx context.Context, id string, log *slog.Logger) {
	for range 2 {
		now := w.cfg.Clock.Now()
		_, err := w.cfg.Store.End(ctx, job.End{ID: id, Now: now, Class: job.DeadLettered, Detail: "message dead-lettered at its receive limit",
			ExpiresAt: w.cfg.Retention.ExpiresAt(job.Failed, now)})
		cur, refused := job.ConflictJob(err)
		switch {
		case err == nil:
			w.countEnded(job.DeadLettered)
			return
		case refused && cur.DeadAttempt(now):
			if _, again := w.recover(ctx, cur, now, log); !again {
				return
			}
		case refused, job.ErrorCode(err) == job.CodeNotFound: // held, or finished: nothing to mark
			return
		default:
			log.Warn("marking the dead-lettered job failed; the reconciler will", "job_id", id, "err", err)
			return
		}
	}
}

// pending is how long a job that is alive does not need a message: until
// its backoff ends, or until the live lease another worker holds ends (its
// message returns only if that worker dies). A record that cannot be read
// gets one lease TTL.
func (w *Worker) pending(ctx context.Context, id string) time.Duration {
	j, err := w.cfg.Store.Get(ctx, id)
	if err != nil {
		return w.cfg.Timing.LeaseTTL
	}
	now := w.cfg.Clock.Now()
	switch {
	case j.State == job.Queued && j.NotBefore.After(now):
		return j.NotBefore.Sub(now)
	case j.LeaseLive(now):
		return j.LeaseUntil.Sub(now)
	}
	return 0
}
