// Package settings is the one place the deployment's numbers live: resource
// names, timeouts, batch sizes, limits. The local dev server creates its
// table and queues from it and the CDK stack (its own module) imports it, so
// the two can never disagree. It imports nothing from AWS.
package settings

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Settings are the deployment-wide numbers. Defaults() is what ships.
type Settings struct {
	// Prefix names every resource: <prefix>-jobs, <prefix>-jobs-dlq.
	Prefix string

	// FailureIndex is the sparse GSI over failed and abandoned jobs, keyed
	// by "<error_class>#<shard>" and the time they ended; FailureShards
	// spreads one hot class over that many partitions.
	FailureIndex  string
	FailureShards int
	// TenantIndex lists one tenant's jobs newest first (GET /jobs), keyed
	// by "<tenant>#<shard>" and "<13-digit created ms>#<id>"; it projects
	// only what changes with a state change, so heartbeats never write to
	// it. TenantShards spreads one tenant over that many partitions, each
	// taking DynamoDB's 1,000 writes a second: at 3 index writes a job, 8
	// carry 2,000 jobs/s of one tenant at 75% of that (a list page reads
	// every shard, so more cost reads). Raising it is safe on a live table
	// (readers query every shard below it, and an old key is one of
	// those); lowering it hides the jobs in the shards dropped.
	TenantIndex  string
	TenantShards int
	// ActiveIndex holds the keys of unfinished jobs, keyed by
	// "active#<shard>" and created_ms: the reconciler's worklist.
	// ActiveShards spreads it over that many partitions: at 2 index writes
	// a job, 24 carry 10,000 jobs/s at 83% of a partition's writes. Like
	// every shard count here it may be raised on a live table, never
	// lowered.
	ActiveIndex  string
	ActiveShards int
	// CreatedIndex holds every job's summary by the UTC day it was
	// created, keyed by "<yyyy-mm-dd>#<shard>" and created_ms: what the
	// operator console's overview and advise --from-table read, in
	// proportion to the days they show rather than the table. Like the
	// tenant index it projects only what changes with a state change.
	// CreatedShards spreads one day over that many partitions: at 3 index
	// writes a job, 40 carry 10,000 jobs/s at 75% of a partition's writes.
	CreatedIndex  string
	CreatedShards int
	// EnlistedIndex holds the keys of the jobs waiting in a batch lane to
	// be collected (job.Enlist), keyed by the lane (job.LaneKey) and the
	// enlist time: a collector reads only what waits, oldest first. Sparse:
	// a job leaves it when collected (job.Collect).
	EnlistedIndex string

	// Reconciler (docs/architecture.md, "The reconciler"): every ReconcileEvery
	// it re-sends, through the claim path, jobs queued and untouched for
	// ReconcileAfter (their message was lost) and jobs whose lease expired that
	// long ago (their worker died and the message is gone).
	ReconcileEvery time.Duration
	ReconcileAfter time.Duration
	// CollectEvery is how often the batch lane's collector runs
	// (docs/lanes.md, "The batch lane"): it submits the batches
	// that are due, polls the submitted ones and settles their results.
	CollectEvery time.Duration
	// CollectorTimeout and CollectorMemoryMB size the collector function,
	// which the CDK stack deploys only when a route offers a batch lane;
	// no function reads them. The stack holds the timeout below
	// CollectEvery, so a run ends before the next is due
	// (docs/deploy.md, "The collector").
	CollectorTimeout  time.Duration
	CollectorMemoryMB int
	// ReconcileResendMax bounds the queued jobs one sweep re-sends while
	// the queue has a backlog (oldest first, each once while it lasts).
	ReconcileResendMax int
	ReconcilerTimeout  time.Duration
	ReconcilerMemoryMB int

	// Worker function and its event source mapping. In AWS,
	// VisibilityTimeout is at least six times the worker's timeout plus the
	// batching window, and the worker's reserved concurrency at least the
	// mapping's MaxConcurrency, so that throttling alone never costs a
	// message a receive (ValidateDeployment). WorkerReservedConcurrency 0
	// means "equal to MaxConcurrency"; only the CDK stack sets it (no
	// function reads it).
	WorkerTimeout             time.Duration
	WorkerMemoryMB            int
	BatchSize                 int
	BatchWindow               time.Duration
	MaxConcurrency            int
	WorkerReservedConcurrency int
	VisibilityTimeout         time.Duration
	MaxReceiveCount           int
	QueueRetention            time.Duration
	DLQRetention              time.Duration

	// API function.
	APITimeout  time.Duration
	APIMemoryMB int

	// Attempt timing (docs/architecture.md, "Timing rules and why").
	// RouteTimeout is the longest route's attempt: every rung's timeout, one
	// after another (the configuration computes it from the routes); the attempt
	// deadline is RouteTimeout + AttemptMargin, and it must end LambdaMargin
	// before the worker does.
	RouteTimeout  time.Duration
	AttemptMargin time.Duration
	Heartbeat     time.Duration
	LeaseTTL      time.Duration
	// LeaseMargin is how long before its unrenewed lease ends an
	// attempt's call is stopped (a timer of its own, whatever the
	// heartbeat is doing): past the lease's end another worker may claim
	// the job. It must exceed the clock skew between workers plus the
	// time a call takes to stop. Zero means one heartbeat (GuardMargin).
	LeaseMargin       time.Duration
	LambdaMargin      time.Duration
	BackoffBase       time.Duration
	BackoffMax        time.Duration
	EnqueueRetryAfter time.Duration
	// RequeueAfter is the longest wait (a deferral, a retry's backoff) a
	// job's message spends hidden in flight; a longer one is re-sent as a
	// delayed message instead (docs/fairness.md, "Long waits leave the
	// in-flight count").
	RequeueAfter time.Duration
	// AWSCallTimeout bounds every DynamoDB and SQS call, the SDK's retries
	// included: a call on a half-open connection fails instead of hanging
	// a heartbeat or a finishing write.
	AWSCallTimeout time.Duration

	// Callbacks (docs/webhooks.md). The notifier function reads the jobs
	// table's stream and the callback queue (<prefix>-callbacks, its DLQ
	// <prefix>-callbacks-dlq). One delivery waits CallbackTimeout at most;
	// a failed one is retried after CallbackRetryBase x 2^(n-1) (half of it
	// jittered), capped at CallbackRetryMax, for CallbackAttempts
	// attempts in all, which in AWS must span at least a day
	// (ValidateDeployment). CallbackLoopback admits loopback targets over
	// plain http: the dev server's receivers; never in AWS.
	CallbackTimeout   time.Duration
	CallbackRetryBase time.Duration
	CallbackRetryMax  time.Duration
	CallbackAttempts  int
	CallbackBatchSize int
	CallbackLoopback  bool
	NotifierTimeout   time.Duration
	NotifierMemoryMB  int

	Retention job.Retention
	Limits    job.Limits
	// QuarantineFor is how long an input that failed deterministically is
	// refused at create for its tenant and route (job.Quarantine); 0
	// turns quarantine off.
	QuarantineFor time.Duration
}

// Defaults are the settings that ship.
func Defaults() Settings {
	return Settings{
		Prefix:             "aijobs",
		FailureIndex:       "failures",
		FailureShards:      4,
		TenantIndex:        "by_tenant_shard",
		TenantShards:       8,
		ActiveIndex:        "active",
		ActiveShards:       24,
		QuarantineFor:      24 * time.Hour,
		CreatedIndex:       "by_created",
		CreatedShards:      40,
		EnlistedIndex:      "enlisted",
		ReconcileEvery:     5 * time.Minute,
		CollectEvery:       time.Minute,
		CollectorTimeout:   50 * time.Second,
		CollectorMemoryMB:  256,
		ReconcileAfter:     10 * time.Minute,
		ReconcileResendMax: 100,
		ReconcilerTimeout:  60 * time.Second,
		ReconcilerMemoryMB: 256,
		WorkerTimeout:      180 * time.Second,
		WorkerMemoryMB:     256,
		BatchSize:          5,
		BatchWindow:        2 * time.Second,
		MaxConcurrency:     10,
		VisibilityTimeout:  1082 * time.Second, // 6 x WorkerTimeout + BatchWindow
		MaxReceiveCount:    20,
		QueueRetention:     4 * 24 * time.Hour,
		DLQRetention:       14 * 24 * time.Hour,
		APITimeout:         10 * time.Second,
		APIMemoryMB:        256,
		RouteTimeout:       120 * time.Second,
		AttemptMargin:      10 * time.Second,
		Heartbeat:          10 * time.Second,
		LeaseTTL:           30 * time.Second,
		LambdaMargin:       10 * time.Second,
		BackoffBase:        2 * time.Second,
		BackoffMax:         5 * time.Minute,
		EnqueueRetryAfter:  2 * time.Second,
		RequeueAfter:       time.Minute,
		AWSCallTimeout:     5 * time.Second,
		CallbackTimeout:    10 * time.Second,
		CallbackRetryBase:  5 * time.Second,
		CallbackRetryMax:   12 * time.Hour,
		CallbackAttempts:   18,
		CallbackBatchSize:  10,
		NotifierTimeout:    60 * time.Second,
		NotifierMemoryMB:   256,
		Retention:          job.Retention{Succeeded: 7 * 24 * time.Hour, Failed: 90 * 24 * time.Hour},
		Limits: job.Limits{
			DefaultModel:       "default",
			Models:             []string{"default"},
			DefaultDeadline:    15 * time.Minute,
			MaxDeadline:        24 * time.Hour,
			DefaultBudget:      job.Cents(50),
			MaxBudget:          job.Cents(10_000),
			DefaultMaxAttempts: 4,
			MaxMaxAttempts:     8,
			DefaultMaxTokens:   1024,
			MaxMaxTokens:       32_768,
			MaxMessages:        256,
			MaxMetadataBytes:   4096,
		},
	}
}

// TableName is the jobs table.
func (s Settings) TableName() string { return s.Prefix + "-jobs" }

// QueueName is the job queue.
func (s Settings) QueueName() string { return s.Prefix + "-jobs" }

// ParkBucketName is the parking lot's bucket on an emulator (pkg/parking);
// a deployment names its own, since S3 bucket names are global.
func (s Settings) ParkBucketName() string { return s.Prefix + "-parked" }

// PayloadBucketName is the payload store's bucket on an emulator (large
// inputs and answers, and uploads: docs/payloads.md).
func (s Settings) PayloadBucketName() string { return s.Prefix + "-payloads" }

// QuarantineTableName is the quarantine table (the inputs known to
// fail, job.Quarantine).
func (s Settings) QuarantineTableName() string { return s.Prefix + "-quarantine" }

// BatchBucketName is a Bedrock batch lane's bucket on an emulator.
func (s Settings) BatchBucketName() string { return s.Prefix + "-batches" }

// BucketsTableName is the buckets table: the providers' rate-limit buckets
// (job.Bucket), the tenants' in-flight and queued slots (job.Slot) and the
// batch lane's batch records (job.BatchRecord). It is named for the
// first, which it once held alone; the name stays, since a new one would
// replace a deployed table.
func (s Settings) BucketsTableName() string { return s.Prefix + "-buckets" }

// TenantsTableName is the tenants table (each tenant's webhook key
// versions).
func (s Settings) TenantsTableName() string { return s.Prefix + "-tenants" }

// DLQName is the job queue's dead letter queue.
func (s Settings) DLQName() string { return s.Prefix + "-jobs-dlq" }

// CallbackQueueName is the queue of callback notices.
func (s Settings) CallbackQueueName() string { return s.Prefix + "-callbacks" }

// CallbackDLQName is where a notice goes after its last attempt.
func (s Settings) CallbackDLQName() string { return s.Prefix + "-callbacks-dlq" }

// WebhookSecretName is the Secrets Manager secret holding the signing
// secrets: "whsec_..." (the current one), then optionally a space and the
// previous one during a rotation.
func (s Settings) WebhookSecretName() string { return s.Prefix + "/webhook-signing-secret" }

// CallbackVisibility is the callback queue's visibility timeout: six
// notifier timeouts, so Lambda can retry a throttled batch before its
// messages return (as for the job queue).
func (s Settings) CallbackVisibility() time.Duration { return 6 * s.NotifierTimeout }

// CallbackMaxReceives is the callback queue's maxReceiveCount: the
// notifier gives a notice up itself after CallbackAttempts; the rest is
// room for receives that never reached a delivery (the store unavailable,
// a throttled batch), so redrive only catches notices no notifier handled.
func (s Settings) CallbackMaxReceives() int { return s.CallbackAttempts + 10 }

// CallbackSpan is how long the delivery schedule keeps trying at least:
// its backoffs with the least jitter.
func (s Settings) CallbackSpan() time.Duration {
	var d time.Duration
	for n := 1; n < s.CallbackAttempts; n++ {
		d += job.Backoff(n, s.CallbackRetryBase, s.CallbackRetryMax, 0)
	}
	return d
}

// AttemptTimeout is the longest one attempt may run: every rung of the
// longest route plus a margin to record the outcome.
func (s Settings) AttemptTimeout() time.Duration {
	return s.RouteTimeout + s.AttemptMargin
}

// GuardMargin is the LeaseMargin in force: one heartbeat unless set.
func (s Settings) GuardMargin() time.Duration {
	if s.LeaseMargin > 0 {
		return s.LeaseMargin
	}
	return s.Heartbeat
}

// ReservedConcurrency is the worker's reserved concurrency in AWS: the
// configured value, or MaxConcurrency when none is.
func (s Settings) ReservedConcurrency() int {
	if s.WorkerReservedConcurrency == 0 {
		return s.MaxConcurrency
	}
	return s.WorkerReservedConcurrency
}

// DeadWorkerRecovery bounds how long a job stays stuck when its worker dies
// after receiving its message but before it hid the message for its
// claim's lease (the first thing it does after the claim): the message
// returns only when the queue's visibility timeout ends, and the
// reconciler re-sends the job (queued and untouched, or running with a
// lease, LeaseTTL from the claim, expired ReconcileAfter ago) at its next
// run, at most ReconcileEvery later. Whichever comes first brings the job
// back. This is the price of the long visibility timeout that lets Lambda
// retry throttled batches (docs/deploy.md, "Throttling and the visibility
// timeout").
func (s Settings) DeadWorkerRecovery() time.Duration {
	return min(s.VisibilityTimeout, s.LeaseTTL+s.ReconcileAfter+s.ReconcileEvery)
}

// Validate checks the timing rules of docs/architecture.md ("Timing rules and
// why"); a deployment that breaks one
// would lose or double-run jobs, so it is refused at start and at synth.
func (s Settings) Validate() error {
	var errs []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	check(s.Prefix != "", "prefix is empty")
	check(s.VisibilityTimeout >= s.WorkerTimeout+s.BatchWindow,
		"visibility timeout %s < worker timeout %s + batching window %s", s.VisibilityTimeout, s.WorkerTimeout, s.BatchWindow)
	check(s.RouteTimeout > 0, "route timeout %s is not positive", s.RouteTimeout)
	check(s.AttemptTimeout()+s.LambdaMargin <= s.WorkerTimeout,
		"attempt timeout %s (longest route %s + margin %s) + lambda margin %s > worker timeout %s",
		s.AttemptTimeout(), s.RouteTimeout, s.AttemptMargin, s.LambdaMargin, s.WorkerTimeout)
	check(s.MaxReceiveCount > 2*s.Limits.MaxMaxAttempts,
		"max receive count %d must exceed twice the max attempts %d (room for lease-held redeliveries)", s.MaxReceiveCount, s.Limits.MaxMaxAttempts)
	check(s.DLQRetention > s.QueueRetention, "DLQ retention %s must exceed queue retention %s", s.DLQRetention, s.QueueRetention)
	check(s.Heartbeat > 0 && s.LeaseTTL >= 2*s.Heartbeat, "lease TTL %s must be at least two heartbeats (%s)", s.LeaseTTL, s.Heartbeat)
	check(s.LeaseMargin >= 0 && s.LeaseTTL >= s.GuardMargin()+2*s.Heartbeat,
		"lease TTL %s must be at least the lease margin %s plus two heartbeats (%s): a healthy call is stopped only after a renewal failed",
		s.LeaseTTL, s.GuardMargin(), s.Heartbeat)
	check(s.GuardMargin() <= s.AttemptMargin,
		"lease margin %s must not exceed the attempt margin %s: the lease ends that margin after the route's timeout, and the guard would cut a call before it",
		s.GuardMargin(), s.AttemptMargin)
	check(s.BatchSize >= 1 && s.BatchSize <= 10, "batch size %d outside 1..10", s.BatchSize)
	check(s.MaxConcurrency >= 2, "maximum concurrency %d below 2 (the Lambda minimum)", s.MaxConcurrency)
	check(s.FailureShards >= 1, "failure shards below 1")
	check(s.TenantShards >= 1, "tenant shards below 1")
	check(s.ActiveShards >= 1, "active shards below 1")
	check(s.CreatedShards >= 1, "created shards below 1")
	check(s.QuarantineFor >= 0, "quarantine for %s: want 0 (off) or more", s.QuarantineFor)
	check(s.ReconcileEvery >= time.Minute, "reconcile every %s: a schedule runs at most once a minute", s.ReconcileEvery)
	check(s.CollectEvery > 0, "collect every %s: want a positive period", s.CollectEvery)
	check(s.ReconcileAfter >= 2*s.LeaseTTL && s.ReconcileAfter >= s.ReconcileEvery,
		"reconcile after %s must be at least two lease TTLs (%s) and one reconcile period (%s): a live job is never re-sent", s.ReconcileAfter, s.LeaseTTL, s.ReconcileEvery)
	check(s.ReconcileResendMax >= 1, "reconcile resend max %d below 1", s.ReconcileResendMax)
	check(s.ReconcilerTimeout >= 10*time.Second, "reconciler timeout %s below 10s", s.ReconcilerTimeout)
	check(s.CollectorTimeout >= 10*time.Second, "collector timeout %s below 10s", s.CollectorTimeout)
	check(s.BackoffBase > 0 && s.BackoffMax >= s.BackoffBase, "backoff base/max out of order")
	check(s.RequeueAfter >= time.Second, "requeue after %s: want at least 1s (SQS delays whole seconds)", s.RequeueAfter)
	check(s.AWSCallTimeout > 0, "AWS call timeout %s is not positive", s.AWSCallTimeout)
	check(s.CallbackTimeout >= time.Second && s.NotifierTimeout >= s.CallbackTimeout+5*time.Second,
		"callback timeout %s must be at least 1s, and the notifier timeout %s at least 5s longer (a batch's deliveries run at once)", s.CallbackTimeout, s.NotifierTimeout)
	// SQS: a message's visibility timeout is at most 12 hours.
	check(s.CallbackRetryBase > 0 && s.CallbackRetryMax >= s.CallbackRetryBase && s.CallbackRetryMax <= 12*time.Hour,
		"callback retry base %s / max %s out of order, or max above SQS's 12h visibility limit", s.CallbackRetryBase, s.CallbackRetryMax)
	check(s.CallbackAttempts >= 1, "callback attempts %d below 1", s.CallbackAttempts)
	check(s.CallbackBatchSize >= 1 && s.CallbackBatchSize <= 10, "callback batch size %d outside 1..10", s.CallbackBatchSize)
	check(s.QueueRetention > 2*s.CallbackSpan(), "queue retention %s must exceed the callback schedule at its longest (%s)", s.QueueRetention, 2*s.CallbackSpan())
	check(s.Retention.Succeeded > 0 && s.Retention.Failed >= s.Retention.Succeeded,
		"retention %s (succeeded) / %s (failed) must be positive, failed at least as long", s.Retention.Succeeded, s.Retention.Failed)
	// ParseCreate applies the defaults without checking them, so a default
	// outside its own bounds would create jobs no claim can ever take.
	l := s.Limits
	check(l.DefaultMaxAttempts >= 1 && l.DefaultMaxAttempts <= l.MaxMaxAttempts, "default max attempts %d outside 1..%d", l.DefaultMaxAttempts, l.MaxMaxAttempts)
	check(l.DefaultDeadline >= time.Second && l.DefaultDeadline <= l.MaxDeadline, "default deadline %s outside 1s..%s", l.DefaultDeadline, l.MaxDeadline)
	check(l.DefaultBudget > 0 && l.DefaultBudget <= l.MaxBudget, "default budget %s cents outside (0, %s]", l.DefaultBudget, l.MaxBudget)
	check(l.DefaultMaxTokens >= 1 && l.DefaultMaxTokens <= l.MaxMaxTokens, "default max tokens %d outside 1..%d", l.DefaultMaxTokens, l.MaxMaxTokens)
	check(l.MaxMessages >= 1, "max messages %d below 1", l.MaxMessages)
	check(slices.Contains(l.Models, l.DefaultModel), "default model %q is not among the models %q", l.DefaultModel, l.Models)
	return joined(errs)
}

// ValidateDeployment is Validate plus the rules only AWS Lambda's event
// source mapping needs, so that throttling alone never costs a message a
// receive (every receive counts towards maxReceiveCount). The CDK stack
// refuses to synthesize without them; the local dev server, whose event
// source emulator never throttles, needs only Validate (its tests run with
// visibility timeouts of seconds).
func (s Settings) ValidateDeployment() error {
	var errs []string
	if err := s.Validate(); err != nil {
		errs = append(errs, strings.TrimPrefix(err.Error(), "settings: "))
	}
	// AWS (Lambda, "Configuring a queue to use with Lambda"): at least six
	// times the function's timeout, so Lambda can retry a batch it could
	// not invoke (throttled) while its messages are still hidden; plus the
	// batching window, during which a received message waits unseen.
	if s.VisibilityTimeout < 6*s.WorkerTimeout+s.BatchWindow {
		errs = append(errs, fmt.Sprintf("visibility timeout %s < 6 x worker timeout %s + batching window %s: a throttled batch would return to the queue and spend a receive",
			s.VisibilityTimeout, s.WorkerTimeout, s.BatchWindow))
	}
	// AWS (Lambda, "Configuring maximum concurrency for Amazon SQS event
	// sources"): reserved concurrency below the mapping's maximum
	// concurrency lets Lambda throttle the mapping's invocations.
	// Standard Webhooks recommends retrying "following a retry schedule
	// spanning multiple days"; aijobs promises at least one.
	if s.CallbackSpan() < 24*time.Hour {
		errs = append(errs, fmt.Sprintf("the callback retry schedule spans %s at the least, under a day: raise AIJOBS_CALLBACK_ATTEMPTS or AIJOBS_CALLBACK_RETRY_MAX", s.CallbackSpan()))
	}
	if s.CallbackLoopback {
		errs = append(errs, "callbacks to loopback are for the dev server, never a deployment")
	}
	if s.WorkerReservedConcurrency != 0 && s.WorkerReservedConcurrency < s.MaxConcurrency {
		errs = append(errs, fmt.Sprintf("worker reserved concurrency %d < maximum concurrency %d: the event source mapping would be throttled",
			s.WorkerReservedConcurrency, s.MaxConcurrency))
	}
	return joined(errs)
}

func joined(errs []string) error {
	if len(errs) > 0 {
		return fmt.Errorf("settings: %s", strings.Join(errs, "; "))
	}
	return nil
}
