package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// WebhookEvent is the body of a callback delivery: the state a job
// reached and its view at that version (docs/webhooks.md).
type WebhookEvent = wire.WebhookEvent

// maxWebhookBody bounds what VerifyWebhook reads: a view with the largest
// stored result, and room.
const maxWebhookBody = 1 << 20

// VerifyWebhook reads and verifies one callback delivery as a receiver's
// HTTP handler gets it, and answers its event. secrets are the deployment's
// signing secrets as Secrets Manager holds them ("whsec_..."; pass two
// during a rotation). A delivery whose signature does not match, whose
// timestamp is more than five minutes from now, or that is not an event
// is an error: answer it with a 4xx and drop it. Deliveries are at least
// once and may arrive out of order: keep the highest event.Data.Version per
// job, or drop repeats by the webhook-id header.
func VerifyWebhook(r *http.Request, secrets ...string) (WebhookEvent, error) {
	var keys []webhook.Secret
	for _, s := range secrets {
		k, err := webhook.ParseSecret(s)
		if err != nil {
			return WebhookEvent{}, err
		}
		keys = append(keys, k)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return WebhookEvent{}, fmt.Errorf("aijobs webhook: read the body: %w", err)
	}
	if len(body) > maxWebhookBody {
		return WebhookEvent{}, fmt.Errorf("aijobs webhook: body over %d bytes", maxWebhookBody)
	}
	if err := webhook.Verify(keys, r.Header, body, time.Now(), 0); err != nil {
		return WebhookEvent{}, err
	}
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return WebhookEvent{}, fmt.Errorf("aijobs webhook: not an event: %w", err)
	}
	return ev, nil
}
