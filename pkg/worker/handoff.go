package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
)

// atReceiveLimit reports whether m was received ReceiveLimit-1 times: if
// it goes back now, its next receive is its last, and SQS moves it to the
// dead letter queue after that without asking anyone. One receive of room
// lets a hand-off that fails try again.
func (w *Worker) atReceiveLimit(m message) bool {
	return w.cfg.ReceiveLimit > 1 && m.receives() >= w.cfg.ReceiveLimit-1
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
func (w *Worker) handOff(ctx context.Context, m message, o outcome) outcome {
	ctx, cancel := detached(ctx, w.timing.handOffMargin())
	defer cancel()
	if o == outcomeKeep && m.jobID != "" {
		delay, tenant := w.unneeded(ctx, m)
		if err := w.queue.SendAfter(ctx, m.jobID, tenant, delay); err != nil {
			m.log.Warn("renewing a message at its receive limit failed; it goes back", "err", err)
			return o
		}
		m.log.Info("message renewed at its receive limit", "delay_ms", delay.Milliseconds())
		w.meter.count("MessagesRenewed", nil)
		return outcomeDelete
	}
	if err := w.queue.DeadLetter(ctx, m.Body, "receive_limit"); err != nil {
		m.log.Warn("dead-lettering a message at its receive limit failed; it goes back", "err", err)
		return o
	}
	m.log.Warn("message dead-lettered at its receive limit")
	w.meter.count("MessagesDeadLettered", map[string]string{"Reason": "receive_limit"})
	if m.jobID != "" {
		w.markDeadLettered(ctx, m.jobID, m.log)
	}
	return outcomeDelete
}

// markDeadLettered ends a job nobody holds with class dead_lettered,
// writing off first a dead attempt the record still carries (its hold
// becomes cost; see recover).
func (w *Worker) markDeadLettered(ctx context.Context, id string, log *slog.Logger) {
	for range 2 {
		now := w.clock.Now()
		_, err := finish.Of{Job: job.Job{ID: id}, Now: now, Retention: w.retention}.
			End(job.DeadLettered, "message dead-lettered at its receive limit").Apply(ctx, w.store)
		cur, refused := job.ConflictJob(err)
		switch {
		case err == nil:
			w.afterEnd.Count(job.DeadLettered)
			return
		case refused && cur.DeadAttempt(now):
			if _, again := w.recover(ctx, cur, now, log); !again {
				return
			}
		case refused, job.ErrorCode(err) == job.CodeNotFound: // held, or finished: nothing to mark
			return
		default:
			log.Warn("marking the dead-lettered job failed; the reconciler will", "err", err)
			return
		}
	}
}

// unneeded is how long an alive job does not need a message, by the rule
// a refused claim follows (job.WhyRefused): while it waits out a backoff
// or another worker's live lease. A job that needs its message now (its
// backoff outlasts its deadline, which the claim path then ends it for)
// gets one at once; a record that cannot be read gets one lease TTL. It
// answers the job's tenant too, the fresh message's group.
func (w *Worker) unneeded(ctx context.Context, m message) (time.Duration, string) {
	j, err := w.store.Get(ctx, m.jobID)
	if err != nil {
		// The group SQS delivered the message in, where it says (AWS,
		// moto; kumo does not).
		return w.timing.LeaseTTL, m.Attributes["MessageGroupId"]
	}
	if d := job.WhyRefused(j, w.clock.Now()); d.Action == job.Wait {
		return d.Delay, j.Tenant
	}
	return 0, j.Tenant
}
