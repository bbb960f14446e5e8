package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Functions are the four Lambdas every stack has, the log groups they
// write to, the reconciler's schedule, the notifier's stream mapping and
// its sweep's schedule; and, only when a route offers a batch lane, the
// collector, its log group and its schedule (nil otherwise).
type Functions struct {
	API, Worker, Reconciler, Notifier                 awslambda.Function
	APILogs, WorkerLogs, ReconcilerLogs, NotifierLogs awslogs.LogGroup
	Schedule, CallbackSweep                           awsevents.Rule
	NotifierStream                                    awslambda.EventSourceMapping
	Collector                                         awslambda.Function
	CollectorLogs                                     awslogs.LogGroup
	CollectSchedule                                   awsevents.Rule
}

// The actions each function calls, and nothing else (docs/architecture.md, "What
// each function may call": the API creates, reads, lists and cancels; the worker
// claims, heartbeats and records, and sends poison messages to the DLQ itself;
// the reconciler reads its worklist from the active index and re-sends stuck
// jobs through the claim path). The event source mapping runs with the worker's
// role, so the worker also gets what it polls with.
var (
	apiTableActions = []string{"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"}
	apiIndexActions = []string{"dynamodb:Query"}
	apiQueueActions = []string{"sqs:SendMessage"}
	// The webhook key routes (docs/webhooks.md, "Your signing key"): GET
	// /webhook-key reads the tenant's key versions and derives its key from
	// the signing secret; POST /webhook-key/rotate moves the versions with
	// one conditional update.
	apiTenantsActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
	apiSecretActions  = []string{"secretsmanager:GetSecretValue"}
	// Quarantine (docs/quarantine.md, "Quarantine"): a create reads
	// whether its input is quarantined; a job that ends deterministically
	// puts its input there.
	apiQuarantineActions = []string{"dynamodb:GetItem"}
	// A tenant's queued limit (docs/fairness.md, "Tenant fairness"): a
	// create adds its job to the tenant's queued set with one conditional
	// UpdateItem (or clears ended entries and adds again), a create not
	// recorded and a cancel take it out: UpdateItem only, a refused add
	// returning the item it saw. A tenant's spend balance (docs/spend.md):
	// a create, GET /spend and POST /quotes read its parts, GetItem each.
	apiBucketsActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
	// Each function's grant on the buckets table is held to the partition
	// keys of the items it keeps there, so that a bug or a stolen role
	// cannot reach another function's items (DynamoDB Developer Guide,
	// "Using IAM policy conditions for fine-grained access control",
	// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html:
	// dynamodb:LeadingKeys with ForAllValues, and StringLike for a key
	// prefix). The keys are pkg/dynamodb's: a tenant's slot
	// shards "tenant#<kind>#<shard>#<tenant>" (slots.go: its queued
	// shards, which the API writes, and its in-flight shards, which the
	// worker does), a batch record
	// "batch#<id>" and the list of open batches "batches#open"
	// (batches.go: the collector's); TestBucketsKeysArePkgDynamodbs
	// checks them against the code. The worker's grant has none: its
	// provider keys' buckets are keyed by the entries' names, which the
	// routes choose.
	apiBucketsKeys       = []string{"tenant#*"}
	collectorBucketsKeys = []string{"batch#*", "batches#open"}
	// The reconciler reads and settles a dead-lettered attempt's holds on
	// its tenant's spend balance (pkg/parking's SpendFirst; docs/spend.md,
	// "Crash windows"): the spend parts, nothing else of the table.
	reconcilerBucketsKeys    = []string{"tenant#spend#*"}
	reconcilerBucketsActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}

	workerQuarantineActions = []string{"dynamodb:PutItem"}
	workerTableActions      = []string{"dynamodb:UpdateItem", "dynamodb:GetItem"}
	// Provider rate limits (docs/ratelimits.md, "Provider rate limits"):
	// before a model call the worker takes from its provider key's bucket,
	// gives back what the call did not use and holds the bucket back when
	// the provider says its limit is spent, each one UpdateItem (which also
	// creates a provider's first item: no PutItem), and reads a bucket
	// (GetItem; pkg/dynamodb.Buckets calls nothing else).
	// Only the worker calls models, so only it reads the buckets; the
	// API writes its tenants' queued sets in the same table.
	workerBucketsActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
	// SendMessage: at its receive limit a message whose job is alive is
	// replaced by a fresh, delayed one (docs/architecture.md, step 6).
	workerQueueActions     = []string{"sqs:ChangeMessageVisibility", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:SendMessage"}
	workerDLQActions       = []string{"sqs:SendMessage"}
	reconcilerIndexActions = []string{"dynamodb:Query"}
	reconcilerTableActions = []string{"dynamodb:UpdateItem", "dynamodb:GetItem"}
	reconcilerQueueActions = []string{"sqs:SendMessage", "sqs:GetQueueAttributes"}
	// The DLQ sweep receives every dead letter (with a short visibility
	// timeout) to mark its job dead_lettered, and deletes nothing.
	reconcilerDLQActions = []string{"sqs:ReceiveMessage"}
	// The parking lot (docs/parking.md, "Parked outcomes"), on
	// parked/* only: the worker parks a paid outcome the table keeps
	// refusing (PutObject), deletes it once a later write records it
	// (DeleteObject), and, finding another attempt dead, reads that
	// attempt's outcome (GetObject) and deletes it once recorded.
	workerParkActions = []string{"s3:PutObject", "s3:GetObject", "s3:DeleteObject"}
	// The reconciler's DLQ sweep settles a dead letter's attempt the same
	// way: it reads the parked outcome and deletes it; it never parks.
	reconcilerParkActions = []string{"s3:GetObject", "s3:DeleteObject"}
	// ListBucket, on the bucket: without it S3 answers a GetObject of a key
	// that does not exist with 403 AccessDenied instead of 404 NoSuchKey
	// (S3 API Reference, GetObject, Permissions), and pkg/parking takes a
	// 403 for a lot it cannot read, so every write-off of an attempt that
	// parked nothing would wait parking.Patience. No s3:prefix condition:
	// the docs promise the 404 for ListBucket on the bucket, and document
	// s3:prefix only as a listing request's prefix, not whether the
	// GetObject check evaluates it. Neither function ever lists.
	parkListActions = []string{"s3:ListBucket"}
	logActions      = []string{"logs:CreateLogStream", "logs:PutLogEvents"}
)

// newFunctions builds the API, worker, reconciler and notifier functions,
// and the collector when a route offers a batch lane: provided.al2023 on
// arm64 (the Go binaries are cross-compiled by `make lambdas`), JSON logs
// to log groups with a retention, and the same environment, so all of
// them load the same settings and routes and refuse to start if they
// break a timing rule (the notifier also gets its queues and its signing
// secret: newNotifier).
func newFunctions(stack awscdk.Stack, cfg Config, sh Shared) Functions {
	env := functionsEnv(cfg, sh)
	f := Functions{APILogs: newLogGroup(stack, "ApiLogs", cfg), WorkerLogs: newLogGroup(stack, "WorkerLogs", cfg),
		ReconcilerLogs: newLogGroup(stack, "ReconcilerLogs", cfg)}
	f.API = newAPIFunction(stack, cfg, sh, env, f.APILogs)
	f.Worker = newWorker(stack, cfg, sh, env, f.WorkerLogs)
	f.Reconciler = newReconciler(stack, cfg, sh, env, f.ReconcilerLogs)
	f.Schedule = newSchedule(stack, cfg, f.Reconciler, scheduleSpec{
		ID: "ReconcileSchedule", Name: "reconcile", What: "run the reconciler", Every: cfg.Settings.ReconcileEvery,
	})
	newNotifier(stack, cfg, sh, env, &f)
	newCollector(stack, cfg, sh, env, &f)
	return f
}

// functionsEnv is the environment every function gets: cfg.Env and the
// names of the resources they share, which only the stack knows.
func functionsEnv(cfg Config, sh Shared) map[string]*string {
	env := map[string]*string{
		"AIJOBS_TABLE":       sh.Table.TableName(),
		"AIJOBS_QUEUE_URL":   sh.Queues.Jobs.QueueUrl(),
		"AIJOBS_DLQ_URL":     sh.Queues.DLQ.QueueUrl(),
		"AIJOBS_PARK_BUCKET": sh.Park.BucketName(),
		// Each function's grant names the prefixes it may touch.
		"AIJOBS_PAYLOAD_BUCKET": sh.Payloads.BucketName(),
		// The API checks it, the worker writes it (each with its own
		// grant); the others only share the environment.
		"AIJOBS_QUARANTINE_TABLE": sh.Quarantine.TableName(),
	}
	// A Bedrock batch lane's bucket and service role: only the collector
	// is granted anything on them, but every function's config.Load
	// refuses to start without the role's ARN when a bedrock rung offers
	// a batch lane, so every function is told both.
	if b := sh.BedrockBatch; b != nil {
		env["AIJOBS_BATCH_BUCKET"] = b.Bucket.BucketName()
		env["AIJOBS_BATCH_ROLE_ARN"] = b.Role.RoleArn()
	}
	for k, v := range cfg.Env {
		env[k] = jsii.String(v)
	}
	return env
}

// newAPIFunction is the function behind the HTTP API (newAPI), with a role
// for exactly what the API calls. Besides the shared environment it gets
// the tenants table and the signing secret, which only its webhook key
// routes use, the quarantine table its creates check, and the side
// table, where its creates keep each tenant's queued jobs.
func newAPIFunction(stack awscdk.Stack, cfg Config, sh Shared, env map[string]*string, logs awslogs.LogGroup) awslambda.Function {
	s := cfg.Settings
	role := newRole(stack, "ApiRole", "aijobs API function: create, read, list and cancel jobs; give each tenant its webhook key, derived from the signing secret", logs,
		append([]awsiam.PolicyStatement{allow(apiTableActions, sh.Table.TableArn()),
			allow(apiIndexActions, indexArn(sh.Table, s.TenantIndex)),
			allow(apiQueueActions, sh.Queues.Jobs.QueueArn()),
			allow(apiTenantsActions, sh.Tenants.TableArn()),
			allow(apiSecretActions, sh.WebhookSecret.SecretArn()),
			allow(apiQuarantineActions, sh.Quarantine.TableArn()),
			allowIf(apiBucketsActions, sh.Buckets.TableArn(), leadingKeys(apiBucketsKeys))}, apiPayloadStatements(sh.Payloads)...)...)
	suppressPayloadWildcards(stack, role, sh.Payloads, inputsPrefix, uploadsPrefix, resultsPrefix)
	own := withEnv(env, map[string]*string{
		"AIJOBS_TENANTS_TABLE":     sh.Tenants.TableName(),
		"AIJOBS_WEBHOOK_SECRET_ID": sh.WebhookSecret.SecretArn(),
		"AIJOBS_BUCKETS_TABLE":     sh.Buckets.TableName(),
	})
	return goFunction(stack, cfg, functionSpec{
		ID: "Api", Name: "api",
		Description: "aijobs HTTP API: POST /jobs, GET /jobs, GET /jobs/{id}, POST /jobs/{id}/cancel, POST /uploads, GET /webhook-key, POST /webhook-key/rotate, GET /spend, POST /quotes",
		AssetDir:    cfg.APIAssetDir, MemoryMB: s.APIMemoryMB, Timeout: s.APITimeout, Role: role, Env: own, Logs: logs,
	})
}

// withEnv is env with own's variables added: a function's environment
// when it needs more than the shared one. env is left as it is, since the
// other functions are built from it too.
func withEnv(env, own map[string]*string) map[string]*string {
	out := make(map[string]*string, len(env)+len(own))
	for k, v := range env {
		out[k] = v
	}
	for k, v := range own {
		out[k] = v
	}
	return out
}

// newWorker is the worker function and its job queue event source, with a
// role for exactly what the worker calls, the routes' models and their
// rate-limit buckets included. Besides the shared environment it gets the
// buckets table, where its buckets and its tenants' in-flight slots are.
func newWorker(stack awscdk.Stack, cfg Config, sh Shared, env map[string]*string, logs awslogs.LogGroup) awslambda.Function {
	s := cfg.Settings
	// The routes' models and keys: computed (and checked) by LoadConfig.
	models, err := modelAccess(cfg)
	if err != nil {
		panic(err)
	}
	role := newRole(stack, "WorkerRole", "aijobs worker function: claim, heartbeat and record jobs, call the routes' models", logs,
		append([]awsiam.PolicyStatement{
			allow(workerTableActions, sh.Table.TableArn()),
			allow(workerQueueActions, sh.Queues.Jobs.QueueArn()),
			allow(workerDLQActions, sh.Queues.DLQ.QueueArn()),
			allow(workerParkActions, parkedObjects(sh.Park)),
			allow(parkListActions, sh.Park.BucketArn()),
			allow(workerQuarantineActions, sh.Quarantine.TableArn()),
			allow(workerBucketsActions, sh.Buckets.TableArn()),
		}, append(workerPayloadStatements(sh.Payloads), models.statements()...)...)...)
	suppressParkedWildcard(stack, role, sh.Park)
	suppressPayloadWildcards(stack, role, sh.Payloads, inputsPrefix, resultsPrefix)
	suppressInferenceProfileWildcards(role, models)
	worker := goFunction(stack, cfg, functionSpec{
		ID: "Worker", Name: "worker", Description: "aijobs worker: SQS batches of job ids, one claim per message",
		AssetDir: cfg.WorkerAssetDir, MemoryMB: s.WorkerMemoryMB, Timeout: s.WorkerTimeout, Role: role, Logs: logs,
		// The buckets table, as its grant.
		Env: withEnv(env, map[string]*string{"AIJOBS_BUCKETS_TABLE": sh.Buckets.TableName()}),
		// At least the mapping's MaxConcurrency (settings.Validate), so no
		// other function can starve the worker into throttling: a throttled
		// batch is retried by Lambda, but only while the visibility timeout
		// keeps its messages hidden. AWS reserves this out of the account's
		// concurrency quota and keeps 100 unreserved: docs/deploy.md,
		// Prerequisites.
		ReservedConcurrency: jsii.Number(float64(s.ReservedConcurrency())),
	})
	// Partial batch failures: a retryable job is released with its own
	// backoff and reported, the others in the batch are deleted.
	// MaxConcurrency caps what one queue can do to the model provider.
	worker.AddEventSource(awslambdaeventsources.NewSqsEventSource(sh.Queues.Jobs, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(s.BatchSize)),
		MaxBatchingWindow:       seconds(s.BatchWindow),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(float64(s.MaxConcurrency)),
	}))
	return worker
}

// suppressInferenceProfileWildcards lets the worker's role grant the
// inference profiles' foundation models in every Region past cdk-nag
// (AwsSolutions-IAM5), each model by name (TestNagSuppressionsArePinned
// lists them), and nothing else: see inferenceProfileWildcard for why.
func suppressInferenceProfileWildcards(role awsiam.Role, models modelGrants) {
	w := models.wildcards()
	if len(w) == 0 {
		return
	}
	appliesTo := make([]string, len(w))
	profiles := make([]string, len(models.Profiles))
	for i, r := range w {
		appliesTo[i] = nagResource(r)
	}
	for i, p := range models.Profiles {
		profiles[i] = p.Profile[strings.LastIndex(p.Profile, "/")+1:]
	}
	suppressWildcards(role, fmt.Sprintf("Inference profiles %s. %s", strings.Join(profiles, ", "), inferenceProfileWildcard), appliesTo...)
}

// newReconciler is the reconciler function, with a role for exactly what
// it calls; newFunctions gives it its schedule.
func newReconciler(stack awscdk.Stack, cfg Config, sh Shared, env map[string]*string, logs awslogs.LogGroup) awslambda.Function {
	s := cfg.Settings
	role := newRole(stack, "ReconcilerRole", "aijobs reconciler function: re-send stuck jobs through the claim path", logs,
		allow(reconcilerIndexActions, indexArn(sh.Table, s.ActiveIndex)),
		allow(reconcilerTableActions, sh.Table.TableArn()),
		allow(reconcilerQueueActions, sh.Queues.Jobs.QueueArn()),
		allow(reconcilerDLQActions, sh.Queues.DLQ.QueueArn()),
		allow(reconcilerParkActions, parkedObjects(sh.Park)),
		allowIf(reconcilerBucketsActions, sh.Buckets.TableArn(), leadingKeys(reconcilerBucketsKeys)),
		allow(parkListActions, sh.Park.BucketArn()))
	suppressParkedWildcard(stack, role, sh.Park)
	return goFunction(stack, cfg, functionSpec{
		ID: "Reconciler", Name: "reconciler",
		Description: fmt.Sprintf("aijobs reconciler: every %s, re-sends jobs stuck for %s (lost message, dead worker)", s.ReconcileEvery, s.ReconcileAfter),
		AssetDir:    cfg.ReconcilerAssetDir, MemoryMB: s.ReconcilerMemoryMB, Timeout: s.ReconcilerTimeout, Role: role, Logs: logs,
		Env: withEnv(env, map[string]*string{"AIJOBS_BUCKETS_TABLE": sh.Buckets.TableName()}),
		// The schedule is the retry: a failed run is followed by the next
		// one ReconcileEvery later, and Lambda's own retries (up to two,
		// minutes apart) would only run it twice in a row.
		RetryAttempts: jsii.Number(0),
	})
}

// scheduleSpec names one of the stack's schedules: its construct id, its
// rule name (<prefix>-<Name>), what it does, for the description, and its
// period (whole minutes, checked by LoadConfig).
type scheduleSpec struct {
	ID, Name, What string
	Every          time.Duration
}

// newSchedule is a rule that invokes fn every spec.Every: the
// reconciler's run and the notifier's callback DLQ sweep (every
// ReconcileEvery), the batch lane's collector (every CollectEvery). Each
// is a run whose missed run the next one makes up, so EventBridge (which
// invokes asynchronously) retries a failed delivery a few times but never
// delivers a run older than the period: the next one is due by then.
func newSchedule(stack awscdk.Stack, cfg Config, fn awslambda.Function, spec scheduleSpec) awsevents.Rule {
	return awsevents.NewRule(stack, jsii.String(spec.ID), &awsevents.RuleProps{
		RuleName:    jsii.String(cfg.Settings.Prefix + "-" + spec.Name),
		Description: jsii.String(fmt.Sprintf("aijobs: %s every %s", spec.What, spec.Every)),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(spec.Every.Minutes()))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   seconds(min(spec.Every, 24*time.Hour)), // EventBridge's limit
		})},
	})
}

// newLogGroup is a function's log group, created by the stack so it has a
// retention and no function needs logs:CreateLogGroup.
func newLogGroup(stack awscdk.Stack, id string, cfg Config) awslogs.LogGroup {
	return awslogs.NewLogGroup(stack, jsii.String(id), &awslogs.LogGroupProps{
		Retention:     cfg.LogRetention,
		RemovalPolicy: removalPolicy(cfg),
	})
}

// newRole is a function's role with exactly the given statements plus
// writing to its own log group, inline so they exist before the function
// and its event source mapping (which checks the role when it is created).
// It is handed to the function immutable: no construct can widen it
// afterwards (SqsEventSource would add sqs:GetQueueUrl, which the worker
// never calls), so the template shows the whole policy.
func newRole(stack awscdk.Stack, id, description string, logs awslogs.LogGroup, statements ...awsiam.PolicyStatement) awsiam.Role {
	statements = append(statements, allow(logActions, logs.LogGroupArn()))
	role := awsiam.NewRole(stack, jsii.String(id), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(description),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"least-privilege": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
		},
	})
	return role
}

// immutable is the role as a function gets it: nothing can add to it.
func immutable(role awsiam.Role) awsiam.IRole {
	return role.WithoutPolicyUpdates(nil)
}

// leadingKeys is the condition that holds a grant on a table to the
// items whose partition keys match one of patterns (ForAllValues: every
// key a request names must match; specifying-conditions.html).
func leadingKeys(patterns []string) map[string]any {
	return map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": patterns}}
}

// allow is one Allow statement on one resource.
func allow(actions []string, resource *string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: &[]*string{resource},
	})
}

// functionSpec is what tells one of the stack's functions from another.
// goFunction builds every one from one, so what they have in common is
// written once.
type functionSpec struct {
	// ID is the construct id; the function is named <prefix>-<Name>.
	ID, Name    string
	Description string
	// AssetDir holds the function's bootstrap binary.
	AssetDir string
	MemoryMB int
	Timeout  time.Duration
	Role     awsiam.Role
	Env      map[string]*string
	Logs     awslogs.LogGroup
	// ReservedConcurrency and RetryAttempts are Lambda's defaults when nil.
	ReservedConcurrency, RetryAttempts *float64
	// MaxEventAge is how long Lambda keeps an asynchronous event it
	// could not run yet (throttled); Lambda's default, 6 hours, when 0.
	MaxEventAge time.Duration
}

// goFunction is a function of this stack: every one is a Go binary named
// bootstrap on the provided.al2023 runtime on arm64, its logs JSON so
// CloudWatch Logs Insights can filter on the slog fields (the worker's EMF
// lines stay plain JSON objects either way), its role immutable and its
// log group its own. spec holds what differs.
func goFunction(scope constructs.Construct, cfg Config, spec functionSpec) awslambda.Function {
	var maxEventAge awscdk.Duration
	if spec.MaxEventAge > 0 {
		maxEventAge = seconds(spec.MaxEventAge)
	}
	return awslambda.NewFunction(scope, jsii.String(spec.ID), &awslambda.FunctionProps{
		FunctionName:                 jsii.String(cfg.Settings.Prefix + "-" + spec.Name),
		Description:                  jsii.String(spec.Description),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		Code:                         awslambda.Code_FromAsset(jsii.String(spec.AssetDir), nil),
		MemorySize:                   jsii.Number(float64(spec.MemoryMB)),
		Timeout:                      seconds(spec.Timeout),
		Role:                         immutable(spec.Role),
		Environment:                  &spec.Env,
		LogGroup:                     spec.Logs,
		ReservedConcurrentExecutions: spec.ReservedConcurrency,
		RetryAttempts:                spec.RetryAttempts,
		MaxEventAge:                  maxEventAge,
	})
}
