// Package signing wires the API's webhook key routes (GET /webhook-key,
// POST /webhook-key/rotate): the tenants table and the deployment's
// signing secret, read from Secrets Manager when a key route first needs
// it. It is a package of its own so that the worker and the reconciler do
// not link Secrets Manager's SDK (docs/benchmarks.md, "Cold start and
// size"), and the API reads no secret on a cold start.
package signing

import (
	"context"
	"fmt"
	"sync"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// New is the key routes' wiring, or nil when the deployment delivers no
// callbacks (the routes then answer 404).
func New(b *roles.Base) *api.Signing {
	if !b.Config.Callbacks {
		return nil
	}
	s := &secrets{reader: secretsmanager.New(secretsmanager.NewClient(b.AWS)), id: b.Config.WebhookSecretID}
	return &api.Signing{Keys: b.Tenants, Secrets: s.get}
}

// APIHandler is the API function's role.
func APIHandler(_ context.Context, b *roles.Base) (any, error) { return b.API(New(b)).Handle, nil }

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
