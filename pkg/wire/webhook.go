package wire

import (
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
)

// WebhookEvent is the body of a callback delivery, shaped as Standard
// Webhooks recommends (docs/webhooks.md): the event's type, when it
// happened, and the job's view at the version delivered. Receivers keep
// the highest data.version they have seen per job and drop the rest:
// deliveries are at least once and may arrive out of order.
type WebhookEvent struct {
	// Type is "job." and the state the job reached: job.running,
	// job.succeeded, job.failed, job.abandoned.
	Type string `json:"type"`
	// Timestamp is when the job reached that state (its updated_at then).
	Timestamp Time `json:"timestamp"`
	Data      View `json:"data"`
}

// EventType is the WebhookEvent type of reaching state s.
func EventType(s job.State) string { return "job." + string(s) }

// NewWebhookEvent is the event that delivers j in its current state.
func NewWebhookEvent(j job.Job) WebhookEvent {
	return WebhookEvent{Type: EventType(j.State), Timestamp: Time{j.UpdatedAt}, Data: NewView(j)}
}

// WebhookID is the webhook-id of the delivery of version v of job id:
// the same for every retry of that delivery, different for every version,
// so a receiver may also use it to drop repeats.
func WebhookID(id string, v int64) string { return fmt.Sprintf("msg_%s_v%d", id, v) }
