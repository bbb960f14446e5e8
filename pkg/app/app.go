// Package app wires adapters to handlers from a config.Config. Every binary
// (the two Lambdas, the dev server, the benchmark, the end-to-end tests)
// goes through it, so none of them can be wired differently from the others.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/dynamodbstreams"
	"github.com/aijobs/aijobs/pkg/emf"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/reconciler"
	"github.com/aijobs/aijobs/pkg/sqs"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/worker"
)

// Role is which function a process serves: a Lambda wires only its own
// handler (the API and the reconciler never call a model, so they never
// read a provider key); the dev server and tests wire everything.
type Role int

// The roles.
const (
	All Role = iota
	APIRole
	WorkerRole
	ReconcilerRole
	NotifierRole
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

// New wires the system described by cfg.
func New(ctx context.Context, cfg config.Config, o Options) (*App, error) {
	if o.Logger == nil {
		o.Logger = Logger(cfg.LogLevel)
	}
	if o.Clock == nil {
		o.Clock = job.SystemClock{}
	}
	awsCfg, err := awsclient.Load(ctx, awsclient.Config{Region: cfg.Region, Endpoint: cfg.Endpoint, Counter: o.Counter,
		CallTimeout: cfg.Settings.AWSCallTimeout, APIOptions: o.APIOptions})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	ddb, sq := awsclient.DynamoDB(awsCfg), awsclient.SQS(awsCfg)
	if o.CreateResources {
		if err := dynamodb.CreateTable(ctx, ddb, cfg.Table, cfg.Settings); err != nil {
			return nil, fmt.Errorf("app: create table: %w", err)
		}
		if cfg.QueueURL, cfg.DLQURL, err = sqs.CreateQueues(ctx, sq, cfg.Settings); err != nil {
			return nil, fmt.Errorf("app: create queues: %w", err)
		}
		if cfg.Callbacks {
			if cfg.CallbackQueueURL, cfg.CallbackDLQURL, err = sqs.CreateCallbackQueues(ctx, sq, cfg.Settings); err != nil {
				return nil, fmt.Errorf("app: create callback queues: %w", err)
			}
		}
	}
	if cfg.QueueURL == "" {
		return nil, fmt.Errorf("app: no queue URL (set AIJOBS_QUEUE_URL)")
	}
	a := &App{Config: cfg, AWS: awsCfg, Logger: o.Logger,
		Store: dynamodb.New(ddb, cfg.Table, cfg.Settings), Queue: sqs.New(sq, cfg.QueueURL, cfg.DLQURL)}
	s := cfg.Settings
	var workerMetrics worker.Metrics
	var reconcilerMetrics reconciler.Metrics
	var notifierMetrics notifier.Metrics
	if cfg.Metrics == "emf" {
		m := emf.New(os.Stdout, o.Clock)
		workerMetrics, reconcilerMetrics, notifierMetrics = m, m, m
	}
	if o.Role == All || o.Role == APIRole {
		var callbacks api.CallbackChecker
		if cfg.Callbacks {
			callbacks = webhook.Checker{Policy: webhook.Policy{AllowLoopback: s.CallbackLoopback}}
		}
		a.API = api.New(api.Config{Store: a.Store, Queue: a.Queue, Limits: s.Limits, Retention: s.Retention, Routes: cfg.Routes,
			Clock: o.Clock, EnqueueRetryAfter: s.EnqueueRetryAfter, Callbacks: callbacks, Logger: o.Logger})
	}
	if cfg.Callbacks && (o.Role == All || o.Role == NotifierRole) {
		if err := a.wireNotifier(ctx, o, sq, notifierMetrics, o.CreateResources); err != nil {
			return nil, err
		}
		if o.CreateResources {
			if a.Stream, err = dynamodbstreams.Find(ctx, ddb, awsclient.DynamoDBStreams(awsCfg), cfg.Table); err != nil {
				return nil, fmt.Errorf("app: %w", err)
			}
		}
	}
	if o.Role == All || o.Role == WorkerRole {
		if a.Providers, err = newProviders(ctx, cfg, awsCfg, o); err != nil {
			return nil, err
		}
		a.Worker = worker.New(worker.Config{
			Store: a.Store, Queue: a.Queue, Clock: o.Clock, Logger: o.Logger, Retention: s.Retention, Metrics: workerMetrics,
			Routes: cfg.Routes, Providers: a.Providers, ReceiveLimit: s.MaxReceiveCount,
			Timing: worker.Timing{Heartbeat: s.Heartbeat, LeaseTTL: s.LeaseTTL, LeaseMargin: s.GuardMargin(), AttemptMargin: s.AttemptMargin,
				LambdaMargin: s.LambdaMargin, BackoffBase: s.BackoffBase, BackoffMax: s.BackoffMax},
		})
	}
	if o.Role == All || o.Role == ReconcilerRole {
		a.Reconciler = reconciler.New(reconciler.Config{Store: a.Store, Queue: a.Queue, After: s.ReconcileAfter, ResendMax: s.ReconcileResendMax, Retention: s.Retention,
			Clock: o.Clock, Logger: o.Logger, Metrics: reconcilerMetrics})
	}
	return a, nil
}

// modelHTTPClient is the client for model providers: the SDK's transport
// (it honours AWS_CA_BUNDLE and proxies like every AWS call), wrapped by
// wrap when set (the chaos harness's ModelTransport), with no overall
// timeout (each call's context bounds it) and, as every provider's, no
// redirects (model.NoRedirects).
func modelHTTPClient(awsCfg aws.Config, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	t := http.DefaultTransport
	if b, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		t = b.GetTransport()
	}
	if wrap != nil {
		t = wrap(t)
	}
	return model.NoRedirects(&http.Client{Transport: t})
}

// Logger is the JSON logger every binary uses (CloudWatch reads JSON lines).
func Logger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
