// Package roles builds what every function shares (the AWS configuration,
// the store, the job queue, metrics, the logger) and serves a role's
// handler on Lambda (Lambda). It builds no handler: each role's package
// does (pkg/app/apirole, workerrole, reconcilerrole, notifierrole,
// collectorrole), so a function that wires only its own role links only
// that role's code (docs/benchmarks.md, "Cold start and size"); pkg/app.New
// composes the role packages for the dev server and the tests.
package roles

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/emf"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/sqs"
)

// Options are what tests and tools change about the shared wiring.
type Options struct {
	// CreateResources makes the table and queues (idempotently) from the
	// settings, as the dev server does on start; Lambdas get them from the
	// stack instead.
	CreateResources bool
	// Counter counts AWS API calls.
	Counter *awsclient.Counter
	// APIOptions are extra SDK middleware for every AWS client (the chaos
	// harness's fault injection); nil means none.
	APIOptions []func(*smithymw.Stack) error
	// LoadAWS resolves AWS configurations: a function's from its
	// environment (awsclient.Env), the dev server's and the tests' through
	// the SDK's default chain (awsconfig.Load), which this package does
	// not import so that the functions do not link it. Nil means
	// awsclient.Load: an emulator's dummy credentials, else an error.
	LoadAWS func(context.Context, awsclient.Config) (aws.Config, error)
	// Logger is the JSON logger; nil means one on standard error at the
	// configured level (Lambda ingests it into CloudWatch Logs).
	Logger *slog.Logger
	// MetricsOutput is where the EMF metric lines go; nil means standard
	// output, where Lambda's CloudWatch Logs agent reads them. The
	// benchmark counts the bytes a function writes here and to Logger.
	MetricsOutput io.Writer
	Clock         job.Clock
}

// Base is what every role is wired from.
type Base struct {
	Config   config.Config
	AWS      aws.Config
	DynamoDB *awsddb.Client
	// Side is the client of the side tables (buckets, slots and batch
	// records, quarantine): a client of its own, so a retryer and a retry
	// quota of its own. Throttles on a hot bucket or slot item spend this
	// client's quota, and the job store's retries go on (docs/ratelimits.md,
	// "Provider rate limits").
	Side  *awsddb.Client
	SQS   *awssqs.Client
	Store *dynamodb.Store
	Queue *sqs.Queue
	// Tenants is the tenants table (each tenant's webhook key versions),
	// which the API's key routes and the notifier read.
	Tenants *dynamodb.Tenants
	// Quarantines is the quarantine table (the inputs known to fail),
	// which the API checks and the worker writes; nil when
	// AIJOBS_QUARANTINE_FOR is 0.
	Quarantines *dynamodb.Quarantines
	Logger      *slog.Logger
	Clock       job.Clock
	// Metrics writes CloudWatch EMF lines; nil when metrics are off.
	Metrics *emf.Writer
	// LoadAWS is Options.LoadAWS, for the configurations a role adds (the
	// worker's Bedrock, which is real AWS even under an emulator).
	LoadAWS func(context.Context, awsclient.Config) (aws.Config, error)
}

// New builds the shared wiring for cfg.
func New(ctx context.Context, cfg config.Config, o Options) (*Base, error) {
	if o.Logger == nil {
		o.Logger = Logger(cfg.LogLevel)
	}
	if o.Clock == nil {
		o.Clock = job.SystemClock{}
	}
	if o.LoadAWS == nil {
		o.LoadAWS = awsclient.Load
	}
	awsCfg, err := o.LoadAWS(ctx, awsclient.Config{Region: cfg.Region, Endpoint: cfg.Endpoint, Counter: o.Counter,
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
		if cfg.Settings.QuarantineFor > 0 {
			if err := dynamodb.CreateQuarantineTable(ctx, ddb, cfg.QuarantineTable); err != nil {
				return nil, fmt.Errorf("app: create quarantine table: %w", err)
			}
		}
		// The buckets table holds the rate-limit buckets, the tenants' slots
		// and the batch lane's batch records.
		if cfg.SharedLimits() || job.AnyBatchLane(cfg.Routes) {
			if err := dynamodb.CreateBucketsTable(ctx, ddb, cfg.BucketsTable); err != nil {
				return nil, fmt.Errorf("app: create the buckets table: %w", err)
			}
		}
		if cfg.Callbacks {
			if err := dynamodb.CreateTenantsTable(ctx, ddb, cfg.TenantsTable); err != nil {
				return nil, fmt.Errorf("app: create tenants table: %w", err)
			}
			if cfg.CallbackQueueURL, cfg.CallbackDLQURL, err = sqs.CreateCallbackQueues(ctx, sq, cfg.Settings); err != nil {
				return nil, fmt.Errorf("app: create callback queues: %w", err)
			}
		}
	}
	if cfg.QueueURL == "" {
		return nil, fmt.Errorf("app: no queue URL (set AIJOBS_QUEUE_URL)")
	}
	b := &Base{Config: cfg, AWS: awsCfg, DynamoDB: ddb, Side: awsclient.DynamoDB(awsCfg), SQS: sq, Logger: o.Logger, Clock: o.Clock, LoadAWS: o.LoadAWS,
		Store: dynamodb.New(ddb, cfg.Table, cfg.Settings), Queue: sqs.New(sq, cfg.QueueURL, cfg.DLQURL),
		Tenants: dynamodb.NewTenants(ddb, cfg.TenantsTable)}
	if cfg.Settings.QuarantineFor > 0 {
		b.Quarantines = dynamodb.NewQuarantines(b.Side, cfg.QuarantineTable)
	}
	if cfg.Metrics == "emf" {
		b.Metrics = emf.New(cmp.Or[io.Writer](o.MetricsOutput, os.Stdout), o.Clock)
	}
	return b, nil
}

// Logger is the JSON logger every binary uses (CloudWatch reads JSON lines).
func Logger(level string) *slog.Logger { return LoggerTo(os.Stderr, level) }

// LoggerTo is Logger writing to w.
func LoggerTo(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
