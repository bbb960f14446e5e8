package apirole

import (
	"context"
	"fmt"
	"sync"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// signing is the webhook key routes' wiring (GET /webhook-key, POST
// /webhook-key/rotate): the tenants table and the deployment's signing
// secret, read from Secrets Manager when a key route first needs it, so
// the API reads no secret on a cold start. It reads the secret itself, not
// a key derived from it: a tenant's key is an HMAC of the secret
// (webhook.Secret.ForTenant) that the route hands to the tenant, and the
// notifier signs with the same derivation. Nil when the deployment
// delivers no callbacks (the routes then answer 404).
func signing(b *roles.Base) *api.Signing {
	if !b.Config.Callbacks {
		return nil
	}
	s := &secrets{reader: secretsmanager.New(secretsmanager.NewClient(b.AWS)), id: b.Config.WebhookSecretID}
	return &api.Signing{Keys: b.Tenants, Secrets: s.get}
}

// secrets reads the deployment's signing secrets once per process, as the
// notifier does; a failed read is tried again on the next request.
type secrets struct {
	reader *secretsmanager.Reader
	id     string

	mu  sync.Mutex
	got []webhook.Secret
}

func (s *secrets) get(ctx context.Context) ([]webhook.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got != nil {
		return s.got, nil
	}
	text, err := s.reader.String(ctx, s.id)
	if err != nil {
		return nil, fmt.Errorf("webhook signing secret: %w", err)
	}
	got, err := webhook.ParseSecrets(text)
	if err != nil {
		return nil, fmt.Errorf("webhook signing secret %s: %w", s.id, err)
	}
	s.got = got
	return got, nil
}
