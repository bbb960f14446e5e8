package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// WebhookKeys is the tenants table's part the key routes drive.
type WebhookKeys interface {
	WebhookKeys(ctx context.Context, tenant string) (job.WebhookKeys, error)
	RotateWebhookKeys(ctx context.Context, tenant string, from int, now time.Time) (job.WebhookKeys, error)
}

// Signing is what the key routes need: the tenants' key versions and the
// deployment's signing secrets, read only when a key route first needs
// them (the other routes never do, so the API's cold start reads no
// secret).
type Signing struct {
	Keys    WebhookKeys
	Secrets func(context.Context) ([]webhook.Secret, error)
}

// webhookKey answers GET /webhook-key: the caller's signing key.
func (h *Handler) webhookKey(ctx context.Context, log *slog.Logger, tenant string) events.APIGatewayV2HTTPResponse {
	if h.signing == nil {
		return problemFor(wire.CodeNotFound, "", "this deployment delivers no callbacks, so it signs none")
	}
	k, err := h.signing.Keys.WebhookKeys(ctx, tenant)
	if err != nil {
		return h.serverProblem(ctx, log, "read webhook key", err)
	}
	return h.keyResponse(ctx, log, k)
}

// rotateWebhookKey answers POST /webhook-key/rotate {"version": N}: a new
// key, the one at N still signing for a day (job.KeyOverlap). A retry of
// a rotation that happened answers the keys as they are; a rotation from
// a version that is no longer current is 409 key_version_moved.
func (h *Handler) rotateWebhookKey(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	if h.signing == nil {
		return problemFor(wire.CodeNotFound, "", "this deployment delivers no callbacks, so it signs none")
	}
	b, bad := body(ev)
	if bad != nil {
		return h.clientProblem(ctx, log, "read body", bad)
	}
	if bad := checkContentType(ev); bad != nil {
		return h.clientProblem(ctx, log, "check content type", bad)
	}
	var rb wire.RotateBody
	if err := strictDecode(b, &rb); err != nil {
		return h.clientProblem(ctx, log, "parse rotate", err)
	}
	if rb.Version < 1 {
		return h.clientProblem(ctx, log, "parse rotate", invalid("version", "version must name the current key version (1 or more)"))
	}
	k, err := h.signing.Keys.RotateWebhookKeys(ctx, tenant, rb.Version, h.clock.Now())
	if job.ErrorCode(err) == job.CodeConflict {
		return h.clientProblem(ctx, log, "rotate webhook key", refuse(wire.CodeKeyVersionMoved, "version",
			"the key is no longer at version %d: read it (GET /webhook-key) and rotate from its version", rb.Version))
	}
	if err != nil {
		return h.serverProblem(ctx, log, "rotate webhook key", err)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "webhook key rotated", slog.Int("version", k.Current))
	return h.keyResponse(ctx, log, k)
}

// keyResponse answers k's keys. The secrets are in the body only: never
// in a log line or an error.
func (h *Handler) keyResponse(ctx context.Context, log *slog.Logger, k job.WebhookKeys) events.APIGatewayV2HTTPResponse {
	secrets, err := h.signing.Secrets(ctx)
	if err != nil {
		return h.serverProblem(ctx, log, "read the signing secret", err)
	}
	body, err := json.Marshal(keyView(k, secrets, h.clock.Now()))
	if err != nil {
		return h.serverProblem(ctx, log, "encode webhook key", fmt.Errorf("encode webhook key: %w", err))
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}

// keyView is the wire answer for k at now, from the deployment's secrets
// (the current first): the keys a delivery is signed with, in the order
// webhook.TenantSecrets signs with them.
func keyView(k job.WebhookKeys, deployment []webhook.Secret, now time.Time) wire.WebhookKey {
	out := wire.WebhookKey{Version: k.Current}
	for _, v := range k.InUse(now) {
		for _, s := range deployment {
			sk := wire.SigningKey{Version: v, Secret: s.ForTenant(k.Tenant, v).Reveal()}
			if v != k.Current {
				sk.Until = &wire.Time{Time: k.RotatedAt.Add(job.KeyOverlap).UTC()}
			}
			out.Signing = append(out.Signing, sk)
		}
	}
	if len(out.Signing) > 0 {
		out.Secret = out.Signing[0].Secret
	}
	return out
}
