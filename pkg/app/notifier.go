package app

import (
	"context"
	"fmt"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
	"github.com/aijobs/aijobs/pkg/sqs"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// wireNotifier builds the notifier: its queue, its signing secrets (read
// once per process; created when create is set and none exists, as the
// dev server does) and its delivery client under the target policy.
func (a *App) wireNotifier(ctx context.Context, o Options, sq *awssqs.Client, metrics notifier.Metrics, create bool) error {
	cfg, s := a.Config, a.Config.Settings
	if cfg.CallbackQueueURL == "" {
		return fmt.Errorf("app: no callback queue URL (set AIJOBS_CALLBACK_QUEUE_URL, or AIJOBS_CALLBACKS=false)")
	}
	sm := awsclient.SecretsManager(a.AWS)
	var text string
	var err error
	if create {
		text, a.WebhookSecretCreated, err = secretsmanager.EnsureString(ctx, sm, cfg.WebhookSecretID, func() string {
			_, t := webhook.NewSecret()
			return t
		})
	} else {
		text, err = secretsmanager.New(sm).String(ctx, cfg.WebhookSecretID)
	}
	if err != nil {
		return fmt.Errorf("app: webhook signing secret: %w", err)
	}
	secrets, err := webhook.ParseSecrets(text)
	if err != nil {
		return fmt.Errorf("app: webhook signing secret %s: %w", cfg.WebhookSecretID, err)
	}
	a.CallbackQueue = sqs.New(sq, cfg.CallbackQueueURL, cfg.CallbackDLQURL)
	a.Notifier = notifier.New(notifier.Config{
		Store: a.Store, Queue: a.CallbackQueue, Changes: dynamodb.StreamChange,
		HTTP:    webhook.Policy{AllowLoopback: s.CallbackLoopback}.Client(s.CallbackTimeout),
		Secrets: secrets, Timeout: s.CallbackTimeout,
		Retry: notifier.Retry{Base: s.CallbackRetryBase, Max: s.CallbackRetryMax, Attempts: s.CallbackAttempts},
		Clock: o.Clock, Metrics: metrics, Logger: o.Logger,
	})
	return nil
}
