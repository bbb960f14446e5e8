// Package notifierrole wires the notifier function's role, which delivers
// job callbacks (docs/webhooks.md): its queue, its signing secrets and its
// delivery client. Only the notifier function (and the dev server) import
// it, so the other functions never link the delivery code
// (docs/benchmarks.md, "Cold start and size").
package notifierrole

import (
	"context"
	"fmt"

	"github.com/aijobs/aijobs/pkg/app/payloads"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
	"github.com/aijobs/aijobs/pkg/sqs"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// Notifier is the wired notifier and its callback queue.
type Notifier struct {
	*notifier.Notifier
	Queue *sqs.Queue
	// SecretCreated says the signing secret was made now (create).
	SecretCreated bool
}

// Handler is the notifier function's Lambda handler (roles.Lambda).
func Handler(ctx context.Context, b *roles.Base) (any, error) {
	if !b.Config.Callbacks {
		return nil, fmt.Errorf("app: the notifier needs AIJOBS_CALLBACKS=true")
	}
	n, err := New(ctx, b, false)
	if err != nil {
		return nil, err
	}
	return n.Handle, nil
}

// New builds the notifier: its queue, its signing secrets (read once per
// process; created when create is set and none exists, as the dev server
// does) and its delivery client under the target policy.
func New(ctx context.Context, b *roles.Base, create bool) (*Notifier, error) {
	cfg, s := b.Config, b.Config.Settings
	if cfg.CallbackQueueURL == "" {
		return nil, fmt.Errorf("app: no callback queue URL (set AIJOBS_CALLBACK_QUEUE_URL, or AIJOBS_CALLBACKS=false)")
	}
	sm := secretsmanager.NewClient(b.AWS)
	n := &Notifier{}
	var text string
	var err error
	if create {
		text, n.SecretCreated, err = secretsmanager.EnsureString(ctx, sm, cfg.WebhookSecretID, func() string {
			_, t := webhook.NewSecret()
			return t
		})
	} else {
		text, err = secretsmanager.New(sm).String(ctx, cfg.WebhookSecretID)
	}
	if err != nil {
		return nil, fmt.Errorf("app: webhook signing secret: %w", err)
	}
	secrets, err := webhook.ParseSecrets(text)
	if err != nil {
		return nil, fmt.Errorf("app: webhook signing secret %s: %w", cfg.WebhookSecretID, err)
	}
	var metrics notifier.Metrics
	if b.Metrics != nil {
		metrics = b.Metrics
	}
	n.Queue = sqs.New(b.SQS, cfg.CallbackQueueURL, cfg.CallbackDLQURL)
	n.Notifier = notifier.New(notifier.Config{
		Store: b.Store, Queue: n.Queue, DeadLetters: n.Queue.DeadLetters(), Changes: dynamodb.StreamChange,
		HTTP:    webhook.Policy{AllowLoopback: s.CallbackLoopback}.Client(s.CallbackTimeout),
		Secrets: secrets, Keys: b.Tenants, Timeout: s.CallbackTimeout, ResultLinks: payloads.NewLinks(b),
		Retry: notifier.Retry{Base: s.CallbackRetryBase, Max: s.CallbackRetryMax, Attempts: s.CallbackAttempts},
		Clock: b.Clock, Metrics: metrics, Logger: b.Logger,
	})
	return n, nil
}
