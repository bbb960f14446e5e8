package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/jsii-runtime-go"
)

// The notifier's event source numbers, the same as the dev server's
// (pkg/app.StreamBatchSize and pkg/app.CallbackConcurrency; restated, not
// imported, because pkg/app drags every adapter into the CDK app, and
// TestNotifierNumbersMatchDevServer checks they agree): a stream batch as
// large as Lambda's default for streams, and a few concurrent deliveries.
const (
	streamBatchSize     = 100
	callbackConcurrency = 5
)

// streamMaxRecordAge is how long the stream's mapping keeps retrying a
// record before it gives it up to the callback DLQ (its shard and sequence
// numbers: Lambda sends a description of the batch, not the records). A
// notice fails only when SendMessage to the callback queue fails, and it
// holds its shard, in order, until the send works again; DynamoDB Streams
// keeps a record 24 hours, so an hour before that the mapping discards it
// with a trace in the DLQ (and its alarm) instead of losing it silently
// when the stream trims it. docs/deploy.md, "Callbacks: the notifier".
const streamMaxRecordAge = 23 * time.Hour

// attrCallbackURL is the item attribute holding a job's callback URL
// (pkg/dynamodb's layout, copied like table.go's names;
// TestStreamFilterPassesCallbackJobs writes jobs through pkg/dynamodb and
// checks the filter against what it stores).
const attrCallbackURL = "cb_url"

// What the notifier calls (docs/architecture.md, "What each function may
// call"): it reads a job and records each delivery attempt on it; its
// stream mapping reads the table's stream; it sends notices to the callback
// queue and its mapping polls them, it hides a failed one for its backoff,
// and it gives one up to the callback DLQ itself (so does the stream
// mapping's on-failure destination, with the function's role); its sweep
// receives the callback DLQ's messages and replaces each notice SQS's
// redrive moved there by a marked copy (pkg/notifier.Sweep); it reads its
// signing secret, and no other, and each tenant's key versions from the
// tenants table, which it never writes.
var (
	notifierTableActions  = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
	notifierStreamActions = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}
	notifierQueueActions  = []string{"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
		"sqs:GetQueueAttributes"}
	notifierDLQActions     = []string{"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"}
	notifierSecretActions  = []string{"secretsmanager:GetSecretValue"}
	notifierTenantsActions = []string{"dynamodb:GetItem"}
)

// newNotifier is the notifier function, its two event sources (the jobs
// table's stream, newNotifierStream, and the callback queue) and its
// callback DLQ sweep's schedule. env is the other functions' environment;
// the notifier also gets its queues, its secret and the tenants table.
func newNotifier(stack awscdk.Stack, cfg Config, sh Shared, env map[string]*string, f *Functions) {
	s := cfg.Settings
	q := sh.Queues
	own := withEnv(env, map[string]*string{
		"AIJOBS_CALLBACK_QUEUE_URL": q.Callbacks.QueueUrl(),
		"AIJOBS_CALLBACK_DLQ_URL":   q.CallbackDLQ.QueueUrl(),
		"AIJOBS_WEBHOOK_SECRET_ID":  sh.WebhookSecret.SecretArn(),
		"AIJOBS_TENANTS_TABLE":      sh.Tenants.TableName(),
	})
	f.NotifierLogs = newLogGroup(stack, "NotifierLogs", cfg)
	role := newRole(stack, "NotifierRole", "aijobs notifier function: turn the table's stream into callback notices and deliver them", f.NotifierLogs,
		allow(notifierTableActions, sh.Table.TableArn()),
		allow(notifierStreamActions, sh.Table.TableStreamArn()),
		allow(notifierQueueActions, q.Callbacks.QueueArn()),
		allow(notifierDLQActions, q.CallbackDLQ.QueueArn()),
		allow(notifierSecretActions, sh.WebhookSecret.SecretArn()),
		allow(notifierTenantsActions, sh.Tenants.TableArn()),
		// A webhook's link to a large answer (docs/payloads.md).
		allow(payloadGet, payloadObjects(sh.Payloads, resultsPrefix)))
	suppressPayloadWildcards(stack, role, sh.Payloads, resultsPrefix)
	f.Notifier = goFunction(stack, cfg, functionSpec{
		ID: "Notifier", Name: "notifier",
		Description: "aijobs notifier: the table's stream into callback notices, the callback queue into signed deliveries",
		AssetDir:    cfg.NotifierAssetDir, MemoryMB: s.NotifierMemoryMB, Timeout: s.NotifierTimeout, Role: role, Env: own, Logs: f.NotifierLogs,
	})
	f.NotifierStream = newNotifierStream(f.Notifier, sh)

	// The sweep of the callback DLQ (pkg/notifier.Sweep), as often as the
	// reconciler sweeps the job DLQ: it makes the notices SQS's redrive
	// moved count for CallbackDlqArrivals.
	f.CallbackSweep = newSchedule(stack, cfg, f.Notifier, scheduleSpec{
		ID: "CallbackSweepSchedule", Name: "callback-sweep", What: "sweep the callback DLQ for redriven notices", Every: s.ReconcileEvery,
	})

	// The callback queue: partial batch failures (a failed delivery is
	// hidden for its backoff and reported), a few deliveries at once.
	f.Notifier.AddEventSource(awslambdaeventsources.NewSqsEventSource(q.Callbacks, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(s.CallbackBatchSize)),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(callbackConcurrency),
	}))
}

// newNotifierStream is the notifier's mapping of the table's stream, in
// order per shard from the oldest record it still has. A notice that
// cannot be sent is reported with its sequence number and Lambda retries
// the shard from it, without end but for the record age; a batch whose
// invocation fails (a crash, a timeout) is halved until the failing record
// is alone. Lambda event filtering (Lambda developer guide,
// invocation-eventfiltering.html, "Filtering DynamoDB events") drops the
// records of jobs without a callback before any invocation: most jobs
// never cost the notifier anything.
func newNotifierStream(notifier awslambda.Function, sh Shared) awslambda.EventSourceMapping {
	stream := notifier.AddEventSourceMapping(jsii.String("TableStream"), &awslambda.EventSourceMappingOptions{
		EventSourceArn:          sh.Table.TableStreamArn(),
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(streamBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
		BisectBatchOnError:      jsii.Bool(true),
		MaxRecordAge:            seconds(streamMaxRecordAge),
		OnFailure:               awslambdaeventsources.NewSqsDlq(sh.Queues.CallbackDLQ),
		Filters:                 &[]*map[string]any{awslambda.FilterCriteria_Filter(&streamFilter)},
	})
	// -1: no limit on retries (CDK only takes 0..10000); the record age
	// above is what ends them.
	stream.Node().DefaultChild().(awslambda.CfnEventSourceMapping).AddPropertyOverride(jsii.String("MaximumRetryAttempts"), -1)
	return stream
}

// streamFilter admits a stream record whose new image has a callback URL:
// an insert or a modification of a job that asked for callbacks. A
// removal (TTL) has no new image and never invokes the notifier.
var streamFilter = map[string]any{
	"dynamodb": map[string]any{
		"NewImage": map[string]any{
			attrCallbackURL: map[string]any{"S": awslambda.FilterRule_Exists()},
		},
	},
}
