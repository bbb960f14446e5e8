// Package notifier tells a job's owner that the job reached a state its
// callback asked for (docs/webhooks.md). It is one Lambda with two event
// sources. The jobs table's stream feeds Stream, which turns each write
// that moved a job into a wanted state into a notice on the callback
// queue; nothing is lost if the writer dies right after its write, since
// the stream holds the write itself. The callback queue feeds Deliver,
// which reads the record, signs its view and POSTs it, records the
// attempt on the job, and retries with backoff through the queue for at
// least a day before it gives the notice to the dead letter queue.
package notifier

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// Store reads a job and records a delivery attempt on it.
type Store interface {
	Get(ctx context.Context, id string) (job.Job, error)
	RecordDelivery(ctx context.Context, d job.Delivery) (job.Job, error)
}

// Queue is the callback queue: Stream sends notices to it; Deliver hides a
// notice for its backoff, and gives one up to the dead letter queue with a
// reason.
type Queue interface {
	SendBody(ctx context.Context, body string) error
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
	DeadLetter(ctx context.Context, body, reason string) error
}

// Keys reads which versions of a tenant's signing key are in use (the
// tenants table).
type Keys interface {
	WebhookKeys(ctx context.Context, tenant string) (job.WebhookKeys, error)
}

// Doer sends a delivery: the policy's client (webhook.Policy.Client), which
// never follows a redirect and never dials a refused address.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Metrics receives counters and timings; nil emits nothing.
type Metrics interface {
	Emit(name string, value float64, unit string, dims map[string]string)
}

// Changes reads a stream record as the job before and after its write
// (dynamodb.StreamChange: the item layout is the store's).
type Changes func(events.DynamoDBEventRecord) (old, cur job.Job, hadOld, hasNew bool, err error)

// Retry is the delivery schedule: attempt n (from 1) waits
// job.Backoff(n, Base, Max) before the next; after Attempts attempts the
// notice goes to the dead letter queue. How long it lasts at least is
// settings.Settings.CallbackSpan.
type Retry struct {
	Base, Max time.Duration
	Attempts  int
}

// Config wires a Notifier.
type Config struct {
	Store Store
	Queue Queue
	// DeadLetters is the callback DLQ, for Sweep; nil sweeps nothing.
	DeadLetters DeadLetters
	Changes     Changes
	HTTP        Doer
	// Secrets are the deployment's signing secrets (the current one first,
	// the previous one too during a rotation); a delivery is signed with
	// its tenant's keys derived from them (webhook.TenantSecrets), never
	// with them.
	Secrets []webhook.Secret
	// Keys says which versions of each tenant's key are in use; nil: every
	// tenant at version 1.
	Keys Keys
	// ResultLinks signs the link an event carries for an answer kept in
	// the payload store; nil: such an event cannot be delivered, and is
	// retried as a failed delivery is.
	ResultLinks ResultLinks
	Retry       Retry
	// Timeout bounds one delivery, connection to last byte.
	Timeout time.Duration
	Clock   job.Clock
	Rand    func() float64
	Metrics Metrics
	Logger  *slog.Logger
}

// Notifier is the notifier Lambda's two handlers. Safe for concurrent use.
type Notifier struct{ cfg Config }

// New fills cfg's optional fields.
func New(cfg Config) *Notifier {
	if cfg.Clock == nil {
		cfg.Clock = job.SystemClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Notifier{cfg: cfg}
}

type noMetrics struct{}

func (noMetrics) Emit(string, float64, string, map[string]string) {}
