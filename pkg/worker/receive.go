package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

type outcome int

const (
	// outcomeDelete lets Lambda delete the message: the job needs nothing
	// more from it, or a fresh message now stands in for it (handOff,
	// crew.wait).
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

// message is one SQS message in the worker's hands: the message, the job
// id its body names (parsed once, on receipt; empty when the body is not a
// job message), its logger, and the invocation's renewals, which the
// heartbeat of an attempt it wins sends its visibility extensions through.
type message struct {
	events.SQSMessage
	jobID string
	log   *slog.Logger
	renew *renewals
}

// receives is the message's ApproximateReceiveCount (0 when SQS sent none).
func (m message) receives() int {
	n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	return n
}

// receive processes one message and, when the worker would return it to
// the queue on the receive before its last, hands it off instead.
func (w *Worker) receive(ctx context.Context, sqsm events.SQSMessage, renew *renewals) (o outcome) {
	m := message{SQSMessage: sqsm, log: w.cfg.Logger.With("message_id", sqsm.MessageId), renew: renew}
	defer func() {
		if v := recover(); v != nil {
			// The message comes back: nothing was recorded for it.
			m.log.Error("panic while processing a message; it stays for redelivery", "panic", fmt.Sprint(v))
			o = outcomeTrouble
		}
		switch {
		case o != outcomeDelete && w.atReceiveLimit(m):
			o = w.handOff(ctx, m, o)
		case o == outcomeTrouble:
			w.backOff(ctx, m)
		}
	}()
	w.noteReceives(m)
	body, ok := job.ParseQueueMessage(m.Body)
	if !ok {
		return w.poison(ctx, m, "unparseable")
	}
	if !job.ValidID(body.JobID) {
		return w.poison(ctx, m, "invalid_job_id")
	}
	m.jobID = body.JobID
	m.log = m.log.With("job_id", m.jobID)
	return w.claim(ctx, m)
}

// poison sends a message that can never be processed to the dead letter
// queue itself, with a reason, instead of letting it loop until
// maxReceiveCount.
func (w *Worker) poison(ctx context.Context, m message, reason string) outcome {
	if err := w.queue.DeadLetter(ctx, m.Body, reason); err != nil {
		m.log.Error("dead-lettering a poison message failed", "reason", reason, "err", err)
		return outcomeTrouble
	}
	m.log.Warn("poison message dead-lettered", "reason", reason)
	w.meter.count("PoisonMessages", nil)
	return outcomeDelete
}

// backOff brings a message whose handling failed (the store or the queue
// refused, a panic) back after a backoff that grows with its receives,
// instead of at the queue's visibility timeout (six function timeouts, 18
// minutes by default): a store outage delays a job by seconds, not by a
// quarter of an hour. If this call fails too, the visibility timeout is
// the bound, and the reconciler's (docs/architecture.md) for a job whose
// message is lost.
func (w *Worker) backOff(ctx context.Context, m message) {
	ctx, cancel := detached(ctx, w.timing.handOffMargin())
	defer cancel()
	d := job.Backoff(m.receives(), w.timing.BackoffBase, w.timing.BackoffMax, w.rand())
	if err := w.queue.ChangeVisibility(ctx, m.ReceiptHandle, d); err != nil {
		m.log.Warn("bringing a failed message back early failed; it returns at its visibility timeout", "err", err)
	}
}
