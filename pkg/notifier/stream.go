package notifier

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// Stream turns the table's changes into notices: one per write that moved
// a job with a callback into a state it asked for. A write that only
// records a delivery (or a heartbeat) leaves the state as it was and sends
// nothing. A notice that cannot be sent fails its record and every later
// one (ReportBatchItemFailures with the record's sequence number): Lambda
// retries the shard from it, in order, so none is skipped.
func (n *Notifier) Stream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	for _, r := range ev.Records {
		old, cur, hadOld, hasNew, err := n.cfg.Changes(r)
		if err != nil {
			// An image the store cannot read will not read better on a
			// retry: skipping it loses one hint, blocking would stop the
			// shard. The job stays pollable.
			n.cfg.Logger.Error("unreadable stream record skipped", "event_id", r.EventID, "err", err)
			n.count("StreamRecordsUnreadable")
			continue
		}
		if !hasNew || !cur.Callback.Wants(cur.State) || (hadOld && old.State == cur.State) {
			continue
		}
		notice := Notice{JobID: cur.ID, Version: cur.Version, State: string(cur.State)}
		if err := n.cfg.Queue.SendBody(ctx, notice.body()); err != nil {
			n.cfg.Logger.Warn("sending a callback notice failed; the shard retries from it", "job_id", cur.ID, "err", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			return resp, nil
		}
		n.count("CallbackNotices")
	}
	return resp, nil
}

func (n *Notifier) count(metric string) {
	n.cfg.Metrics.Emit(metric, 1, "Count", nil)
}
