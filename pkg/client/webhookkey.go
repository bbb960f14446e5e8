package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/aijobs/aijobs/pkg/wire"
)

// WebhookKey is the caller's webhook signing key (docs/webhooks.md, "Your
// signing key"): Secret is what VerifyWebhook takes; Signing lists every
// key deliveries are signed with now.
type WebhookKey = wire.WebhookKey

// WebhookKey reads the caller's signing key: the one that verifies the
// callbacks of its own jobs, and no other tenant's.
func (c *Client) WebhookKey(ctx context.Context) (WebhookKey, error) {
	a, err := c.call(ctx, request{method: http.MethodGet, path: "/webhook-key"}, http.StatusOK)
	if err != nil {
		return WebhookKey{}, err
	}
	return decodeKey(a)
}

// RotateWebhookKey makes a new key, rotating away from version from (the
// current one, as WebhookKey answered it); the old key keeps signing for a
// day. Retried after a lost answer, it rotates once; if another rotation
// came first, the error's code is key_version_moved.
func (c *Client) RotateWebhookKey(ctx context.Context, from int) (WebhookKey, error) {
	body, err := json.Marshal(wire.RotateBody{Version: from})
	if err != nil {
		return WebhookKey{}, err
	}
	a, err := c.call(ctx, request{method: http.MethodPost, path: "/webhook-key/rotate", body: body}, http.StatusOK)
	if err != nil {
		return WebhookKey{}, err
	}
	return decodeKey(a)
}

func decodeKey(a answer) (WebhookKey, error) {
	var k WebhookKey
	if err := json.Unmarshal(a.body, &k); err != nil {
		return WebhookKey{}, fmt.Errorf("aijobs API: decode the webhook key (status %d): %w", a.status, err)
	}
	if k.Secret == "" {
		return WebhookKey{}, errors.New("aijobs API: the answer holds no webhook key")
	}
	return k, nil
}
