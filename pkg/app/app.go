// Package app wires adapters to handlers from a config.Config for the dev
// server, the benchmark, the chaos harness and the end-to-end tests: every
// role at once, or one. It composes the packages each Lambda function uses
// alone (pkg/app/roles, the shared wiring, and one package per role:
// apirole, workerrole, reconcilerrole, notifierrole, collectorrole), so no
// binary is wired differently from the others, and each function links
// only its own role's code.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/app/apirole"
	"github.com/aijobs/aijobs/pkg/app/collectorrole"
	"github.com/aijobs/aijobs/pkg/app/lot"
	"github.com/aijobs/aijobs/pkg/app/notifierrole"
	"github.com/aijobs/aijobs/pkg/app/payloads"
	"github.com/aijobs/aijobs/pkg/app/providers"
	"github.com/aijobs/aijobs/pkg/app/reconcilerrole"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/app/workerrole"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/awsclient/awsconfig"
	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/dynamodbstreams"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/reconciler"
	"github.com/aijobs/aijobs/pkg/sqs"
	"github.com/aijobs/aijobs/pkg/worker"
)

// Role is which function a process serves: the chaos harness runs each
// role as its own process, as in AWS (the API and the reconciler never
// call a model, so they never read a provider key); the dev server and
// tests wire everything.
type Role int

// The roles. CollectorRole is the batch lane's collector alone, over the
// providers its lanes call (collectorrole.New); All runs it too, over the
// worker's providers.
const (
	All Role = iota
	APIRole
	WorkerRole
	ReconcilerRole
	NotifierRole
	CollectorRole
)

// Options are what tests and tools change about the wiring.
type Options struct {
	Role Role
	// CreateResources makes the table and queues (idempotently) from the
	// settings, as the dev server does on start; Lambdas get them from the
	// stack instead.
	CreateResources bool
	// Counter counts AWS API calls.
	Counter *awsclient.Counter
	// APIOptions are extra SDK middleware for every AWS client (the chaos
	// harness's fault injection); nil means none.
	APIOptions []func(*smithymw.Stack) error
	// ModelTransport, when set, wraps the HTTP transport of the HTTP model
	// providers (the chaos harness observes what each call received); nil
	// means the transport as it is.
	ModelTransport func(http.RoundTripper) http.RoundTripper
	// Providers replace the configured providers of the same names;
	// EveryProvider, when set, replaces every one of them.
	Providers     map[string]model.Provider
	EveryProvider model.Provider
	Logger        *slog.Logger
	// MetricsOutput is where the EMF metric lines go; nil means standard
	// output (roles.Options).
	MetricsOutput io.Writer
	Clock         job.Clock
}

// App is the wired system.
type App struct {
	Config    config.Config
	AWS       aws.Config
	Store     *dynamodb.Store
	Queue     *sqs.Queue
	Providers map[string]model.Provider
	// The handlers of the role: API, Worker and Reconciler (nil when the
	// role does not serve them).
	API        *api.Handler
	Worker     *worker.Worker
	Reconciler *reconciler.Reconciler
	// Collector runs the batch lane (nil when no route offers one, or the
	// role does not serve it).
	Collector *collector.Collector
	// Notifier and its callback queue, when the role serves it and
	// callbacks are on (config.Config.Callbacks).
	Notifier      *notifier.Notifier
	CallbackQueue *sqs.Queue
	// WebhookSecretCreated says the dev server made the signing secret now.
	WebhookSecretCreated bool
	// Stream is the jobs table's stream, which the dev server feeds to the
	// notifier (in AWS an event source mapping does).
	Stream *dynamodbstreams.Stream
	Logger *slog.Logger
}

// New wires the system described by cfg: the shared wiring (pkg/app/roles)
// and, on it, the handlers of the role's packages.
func New(ctx context.Context, cfg config.Config, o Options) (*App, error) {
	b, err := roles.New(ctx, cfg, roles.Options{CreateResources: o.CreateResources, Counter: o.Counter, APIOptions: o.APIOptions,
		Logger: o.Logger, MetricsOutput: o.MetricsOutput, Clock: o.Clock, LoadAWS: awsconfig.Load})
	if err != nil {
		return nil, err
	}
	cfg = b.Config
	if o.CreateResources {
		if err := lot.Create(ctx, b); err != nil {
			return nil, fmt.Errorf("app: create the parking bucket: %w", err)
		}
		if err := payloads.Create(ctx, b); err != nil {
			return nil, fmt.Errorf("app: create the payload bucket: %w", err)
		}
		if err := providers.CreateBatchBucket(ctx, b); err != nil {
			return nil, fmt.Errorf("app: create the batch bucket: %w", err)
		}
	}
	a := &App{Config: cfg, AWS: b.AWS, Logger: b.Logger, Store: b.Store, Queue: b.Queue}
	if o.Role == All || o.Role == APIRole {
		a.API = apirole.New(b)
	}
	if cfg.Callbacks && (o.Role == All || o.Role == NotifierRole) {
		n, err := notifierrole.New(ctx, b, o.CreateResources)
		if err != nil {
			return nil, err
		}
		a.Notifier, a.CallbackQueue, a.WebhookSecretCreated = n.Notifier, n.Queue, n.SecretCreated
		if o.CreateResources {
			if a.Stream, err = dynamodbstreams.Find(ctx, b.DynamoDB, dynamodbstreams.NewClient(b.AWS), cfg.Table); err != nil {
				return nil, fmt.Errorf("app: %w", err)
			}
		}
	}
	if o.Role == All || o.Role == WorkerRole {
		if a.Providers, err = providers.New(ctx, b, providers.Options{Replace: o.Providers, Every: o.EveryProvider, Transport: o.ModelTransport}); err != nil {
			return nil, err
		}
		a.Worker = workerrole.New(b, a.Providers)
		if o.Role == All {
			a.Collector = collectorrole.Over(b, a.Providers)
		}
	}
	if o.Role == CollectorRole {
		if a.Collector, a.Providers, err = collectorrole.New(ctx, b, providers.Options{Replace: o.Providers, Every: o.EveryProvider,
			Transport: o.ModelTransport}); err != nil {
			return nil, err
		}
	}
	if o.Role == All || o.Role == ReconcilerRole {
		a.Reconciler = reconcilerrole.New(b)
	}
	return a, nil
}

// Logger is the JSON logger every binary uses (CloudWatch reads JSON lines).
func Logger(level string) *slog.Logger { return roles.Logger(level) }

// LoggerTo is Logger writing to w.
func LoggerTo(w io.Writer, level string) *slog.Logger { return roles.LoggerTo(w, level) }
