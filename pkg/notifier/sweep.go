package notifier

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// reasonRedriven marks a notice that SQS's redrive moved to the callback
// DLQ (docs/errors.md): the sweep sends it again with this reason.
const reasonRedriven = "callback_redriven"

// reasonAttribute is the message attribute a dead letter's reason is in
// (pkg/sqs.ReasonAttribute, restated so this package imports no SDK).
const reasonAttribute = "aijobs_reason"

// DeadLetters is the callback DLQ as a queue of its own, for the sweep.
type DeadLetters interface {
	ReceiveHidden(ctx context.Context, max int, wait, hide time.Duration) ([]events.SQSMessage, error)
	Delete(ctx context.Context, receiptHandles []string) error
}

// SweepReport is what one sweep of the callback DLQ did.
type SweepReport struct {
	// Redriven are the notices found there without a reason (moved by
	// SQS's redrive) and sent again with reason callback_redriven.
	Redriven int `json:"redriven"`
	Errors   int `json:"errors"`
}

// Sweep finds the notices SQS's redrive moved into the callback DLQ and
// makes each arrival count: SQS does not count a redrive in the DLQ's
// NumberOfMessagesSent (SQS developer guide, sqs-dead-letter-queues.html),
// which is all the arrival alarm would otherwise read, so a notice on
// which the notifier crashed CallbackMaxReceives times arrived silently.
// A dead letter without aijobs_reason that is not the stream mapping's
// record of a discarded batch (Lambda sends that one itself, and it is
// counted) is such a notice. The sweep sends it again with reason
// callback_redriven (a SendMessage, which the metric counts, and the mark
// that makes the next sweep pass it by), then deletes the original; it
// emits CallbackNoticesRedriven, the alarm's second term. A sweep killed
// between the two leaves both copies, and the next marks the original
// again: an arrival may count twice, never not at all. A notifier
// scheduled every ReconcileEvery runs it (docs/deploy.md, "Callbacks:
// the notifier").
func (n *Notifier) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	dlq := n.cfg.DeadLetters
	if dlq == nil {
		return rep, nil
	}
	seen := map[string]bool{}
	for len(seen) < sweepMax {
		msgs, err := dlq.ReceiveHidden(ctx, min(10, sweepMax-len(seen)), 0, sweepHide)
		if err != nil {
			n.cfg.Logger.Warn("reading the callback dead letter queue failed", "err", err)
			rep.Errors++
			break
		}
		fresh := 0
		for _, m := range msgs {
			if seen[m.MessageId] {
				continue
			}
			seen[m.MessageId], fresh = true, fresh+1
			if !redriven(m) {
				continue
			}
			if n.markRedriven(ctx, dlq, m) {
				rep.Redriven++
			} else {
				rep.Errors++
			}
		}
		if fresh == 0 {
			break
		}
	}
	n.cfg.Metrics.Emit("CallbackNoticesRedriven", float64(rep.Redriven), "Count", nil)
	n.cfg.Logger.Info("callback dead letters swept", "redriven", rep.Redriven, "errors", rep.Errors)
	return rep, nil
}

// sweepMax bounds the dead letters one sweep reads; sweepHide hides each
// it reads so the sweep sees it once (they come back for the operator).
const (
	sweepMax  = 500
	sweepHide = 30 * time.Second
)

// markRedriven sends m again with reason callback_redriven and deletes
// the original; it says whether the mark was sent.
func (n *Notifier) markRedriven(ctx context.Context, dlq DeadLetters, m events.SQSMessage) bool {
	log := n.cfg.Logger.With("message_id", m.MessageId)
	if notice, ok := parseNotice(m.Body); ok {
		log = log.With("job_id", notice.JobID, "version", notice.Version)
	}
	if err := n.cfg.Queue.DeadLetter(ctx, m.Body, reasonRedriven); err != nil {
		log.Error("marking a redriven callback notice failed; the next sweep tries again", "err", err)
		return false
	}
	log.Warn("callback notice moved to the dead letter queue by SQS's redrive: no notifier handled it in its receives", "reason", reasonRedriven)
	if err := dlq.Delete(ctx, []string{m.ReceiptHandle}); err != nil {
		log.Warn("deleting a redriven notice after marking it failed: it stays beside its mark until the next sweep", "err", err)
	}
	return true
}

// redriven says whether a dead letter is one SQS moved: no reason (the
// notifier gives every notice up with one) and not the stream mapping's
// record of a discarded batch, which carries DDBStreamBatchInfo (Lambda
// developer guide, services-dynamodb-errors.html).
func redriven(m events.SQSMessage) bool {
	if _, ok := m.MessageAttributes[reasonAttribute]; ok {
		return false
	}
	var record struct {
		Batch json.RawMessage `json:"DDBStreamBatchInfo"`
	}
	return json.Unmarshal([]byte(m.Body), &record) != nil || record.Batch == nil
}
