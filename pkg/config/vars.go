package config

import (
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// vars are every variable, in documentation order. A variable that sets a
// settings field is declared with setting(): its default is that field's
// value in settings.Defaults(), so the numbers live in pkg/settings alone
// and config.Load, docs/configuration.md's table and the CDK stack all read them from
// there. The others (region, endpoint, provider, prices) have no settings
// field and state their own default here.
var vars = []Var{
	{"AWS_REGION", "us-east-1", "AWS region.", into(text, func(c *Config) *string { return &c.Region })},
	{"AWS_ENDPOINT_URL", "", "AWS endpoint for every service: kumo or LocalStack (`http://127.0.0.1:4566`); empty means real AWS. `make dev` sets it to its kumo; tests use it when set, else each test binary starts its own kumo.", into(text, func(c *Config) *string { return &c.Endpoint })},
	setting("AIJOBS_PREFIX", text, func(s *settings.Settings) *string { return &s.Prefix },
		"Resource name prefix: table `<prefix>-jobs`, queues `<prefix>-jobs` and `<prefix>-jobs-dlq`."),
	{"AIJOBS_TABLE", "", "Jobs table name (the CDK stack sets it; default `<prefix>-jobs`).", into(text, func(c *Config) *string { return &c.Table })},
	{"AIJOBS_QUEUE_URL", "", "Job queue URL (the CDK stack sets it; the dev server creates the queue and finds it).", into(text, func(c *Config) *string { return &c.QueueURL })},
	{"AIJOBS_DLQ_URL", "", "Dead letter queue URL, where the worker sends poison messages itself.", into(text, func(c *Config) *string { return &c.DLQURL })},
	{"AIJOBS_QUARANTINE_TABLE", "", "Quarantine table: the inputs known to fail, refused at create (docs/quarantine.md, \"Quarantine\"; the CDK stack sets it). Default `<prefix>-quarantine`, which the dev server creates.", into(text, func(c *Config) *string { return &c.QuarantineTable })},
	{"AIJOBS_BUCKETS_TABLE", "", "Buckets table (named for its first use): what the functions share besides the jobs: each provider key's rate-limit bucket (every openai, anthropic and bedrock entry; its limits declared or learned from the provider's answers), taken from before a call; each tenant's jobs in flight and queued, and its spend balances (docs/spend.md); and the batch lane's batch records (docs/ratelimits.md, \"Provider rate limits\", \"Tenant fairness\", \"The batch lane\"; the CDK stack sets it). Default `<prefix>-buckets`, which the dev server creates when a provider entry has a bucket or AIJOBS_TENANT_IN_FLIGHT, AIJOBS_TENANT_QUEUED or AIJOBS_TENANT_SPEND sets one.", into(text, func(c *Config) *string { return &c.BucketsTable })},
	{"AIJOBS_BUCKET_PART_RPM", count.format(job.PartRequests), "The requests a minute one part of a provider key's bucket carries: a key of more is split into parts, as many as its requests a minute over this, rounded up (at most 64), each an item of the buckets table holding its share of the key's limit, so no one item takes every call's writes (docs/ratelimits.md, \"A key split into parts\"). The default, 100 calls a second, keeps a part at about a third of DynamoDB's 1,000 write units a second per item; a test whose item limits are scaled down scales it with them. 0: never split.", into(count, func(c *Config) *int { return &c.BucketPartRPM })},
	{"AIJOBS_TENANT_IN_FLIGHT", "", "How many jobs each tenant may have in flight at once, shared by every worker through the buckets table (AIJOBS_BUCKETS_TABLE): a default and overrides by tenant as the record names it, `8,jwt:tenant-a=2,iam:AROA...:app=0` (0: no limit; at most 5000). A job over it is deferred, its attempt uncounted (docs/fairness.md, \"Tenant fairness\"). Empty: no limit.", into(text, func(c *Config) *string { return &c.InFlightText })},
	{"AIJOBS_TENANT_QUEUED", "", "How many jobs each tenant may have queued (accepted, their first call not yet started), shared by every API instance through the buckets table (AIJOBS_BUCKETS_TABLE): a default and overrides as for AIJOBS_TENANT_IN_FLIGHT, `1000,jwt:tenant-a=50` (0: no limit; at most 5000). A create over it is refused 429 `too_many_queued` with Retry-After, nothing recorded (docs/fairness.md, \"Tenant fairness\"). Empty: no limit.", into(text, func(c *Config) *string { return &c.QueuedText })},
	{"AIJOBS_TENANT_SPEND", "", "What each tenant may spend a UTC day and a UTC month, shared by every worker through the buckets table (AIJOBS_BUCKETS_TABLE): comma-separated, the deployment's default per period and overrides by tenant as the record names it, `day=$50,month=$1000,jwt:tenant-a=day:$5+month:$100,jwt:tenant-b=none` (dollars with at most two decimals, the `$` optional, at most $10000000; an override replaces the default for the periods it names, `day:none` lifts one, `none` both; $0 lets nothing be spent). Each attempt holds its worst case against the tenant's balance for the period as it holds it against the job's budget; an attempt the balance cannot cover is deferred uncounted until the period turns or the limit is raised, and abandoned `spend_limit` at its deadline (docs/spend.md). Empty: no limit.", into(text, func(c *Config) *string { return &c.SpendText })},
	{"AIJOBS_SPEND_ALARM_SHARE", "0.8", "The share of a tenant's spend limit (above 0, at most 1) whose passing the worker logs (the warning names the tenant and period) and counts in SpendShareReached, the metric the SpendShareReached alarm watches (docs/deploy.md, \"Alarms\"): a settle that takes one part of the tenant's balance past this share of the part's limit, never later than the tenant's whole spend passing it, and exact for a limit of one part (docs/spend.md, \"Seen coming: alarms and the webhook\").", into(fraction, func(c *Config) *float64 { return &c.SpendAlarmShare })},
	setting("AIJOBS_QUARANTINE_FOR", duration, func(s *settings.Settings) *time.Duration { return &s.QuarantineFor },
		"How long an input that failed deterministically (context_length_exceeded, content_filtered, invalid_request) is refused at create for its tenant and route with 422 input_quarantined; 0 turns quarantine off."),
	{"AIJOBS_TENANTS_TABLE", "", "Tenants table: which versions of each tenant's webhook signing key are in use (docs/webhooks.md; the CDK stack sets it). Default `<prefix>-tenants`, which the dev server creates.", into(text, func(c *Config) *string { return &c.TenantsTable })},
	{"AIJOBS_PARK_BUCKET", "", "S3 bucket where a worker parks a paid outcome the table keeps refusing, for the next worker to record (docs/parking.md, \"Parked outcomes\"; the CDK stack sets it). Default `<prefix>-parked`, which the dev server creates.", into(text, func(c *Config) *string { return &c.ParkBucket })},
	{"AIJOBS_PAYLOAD_BUCKET", "", "S3 bucket for what does not fit a job's record: a large input, a large answer, and what a caller uploads before the create that names it (docs/payloads.md; the CDK stack makes and sets it). Default `<prefix>-payloads`, which the dev server creates.", into(text, func(c *Config) *string { return &c.PayloadBucket })},
	{"AIJOBS_BATCH_BUCKET", "", "S3 bucket for a Bedrock batch lane's batches, their input and output (docs/lanes.md, \"The batch lane\"; the CDK stack makes and sets it). Default `<prefix>-batches`, which the dev server creates when a bedrock rung offers a batch lane.", into(text, func(c *Config) *string { return &c.BatchBucket })},
	{"AIJOBS_BATCH_ROLE_ARN", "", "The service role Bedrock assumes to read and write AIJOBS_BATCH_BUCKET (the CDK stack makes and sets it); required when a bedrock rung offers a batch lane.", into(text, func(c *Config) *string { return &c.BatchRoleARN })},
	{"AIJOBS_CALLBACK_QUEUE_URL", "", "Callback queue URL: the notifier's notices (the CDK stack sets it; the dev server creates the queue).", into(text, func(c *Config) *string { return &c.CallbackQueueURL })},
	{"AIJOBS_CALLBACK_DLQ_URL", "", "The callback queue's dead letter queue, where the notifier sends a notice after its last attempt.", into(text, func(c *Config) *string { return &c.CallbackDLQURL })},
	{"AIJOBS_WEBHOOK_SECRET_ID", "", "Secrets Manager id (name or ARN) of the webhook signing secrets: `whsec_...`, then optionally a space and the previous one during a rotation (docs/webhooks.md). Empty: `<prefix>/webhook-signing-secret`; the dev server creates it when missing.", into(text, func(c *Config) *string { return &c.WebhookSecretID })},
	{"AIJOBS_CALLBACKS", "true", "`true`: a create may name a `callback_url`, delivered by the notifier; `false`: such a create is refused (400).", into(boolean, func(c *Config) *bool { return &c.Callbacks })},
	{"AIJOBS_LISTEN", "127.0.0.1:8080", "Dev server listen address.", into(text, func(c *Config) *string { return &c.Listen })},
	{"AIJOBS_METRICS", "emf", "Worker metrics: `emf` (CloudWatch Embedded Metric Format lines on stdout) or `off`. `make dev` sets `off`.", into(text, func(c *Config) *string { return &c.Metrics })},
	{"AIJOBS_LOG_LEVEL", "info", "Log level: debug, info, warn, error.", into(text, func(c *Config) *string { return &c.LogLevel })},

	{"AIJOBS_ROUTES", "", "Model routes and their providers, as one JSON document (see Model routes above): each route an ordered list of rungs (provider, model, price, max tokens, timeout) and the error classes it falls back on. Empty: one `default` route from the variables below.", into(text, func(c *Config) *string { return &c.RoutesJSON })},
	{"AIJOBS_MODEL_PROVIDER", "", "Without AIJOBS_ROUTES: provider of the `default` route, `fake` or `openai`. Empty: `openai` when OPENAI_BASE_URL is set, else `fake`.", into(text, func(c *Config) *string { return &c.Shortcut.Kind })},
	{"OPENAI_BASE_URL", "", "OpenAI-compatible API base URL (OpenAI, vLLM, Ollama, LiteLLM), e.g. `https://api.openai.com/v1`. Setting it switches the default route to it.", into(text, func(c *Config) *string { return &c.Shortcut.BaseURL })},
	{"OPENAI_API_KEY", "", "API key sent as a bearer token. Never logged.", into(text, func(c *Config) *string { return &c.Shortcut.APIKey })},
	{"AIJOBS_OPENAI_MODEL", "gpt-4o-mini", "Model id sent to the OpenAI-compatible server.", into(text, func(c *Config) *string { return &c.Shortcut.Model })},
	{"AIJOBS_OPENAI_STREAM", "true", "Stream responses (drives job progress; usage is requested in the stream).", into(boolean, func(c *Config) *bool { return &c.Shortcut.Stream })},
	{"AIJOBS_PRICE_INPUT", "15", "Price of input tokens, cents per million tokens (at most 3 decimals).", price(false)},
	{"AIJOBS_PRICE_OUTPUT", "60", "Price of output tokens, cents per million tokens.", price(true)},
	{"AIJOBS_PRICES", "", "Per-model price table for the OpenAI-compatible server, `model=input:output,...` in cents per million tokens (e.g. `gpt-4o-mini=15:60,gpt-4o=250:1000`); a listed model overrides AIJOBS_PRICE_INPUT/OUTPUT.", priceTable},
	{"AIJOBS_MODEL_TIMEOUT", duration.format(settings.Defaults().RouteTimeout), "Timeout of one model call (one rung); the default of a rung that names none.", into(duration, func(c *Config) *time.Duration { return &c.Shortcut.Timeout })},
	{"AIJOBS_FAKE_LATENCY", "500ms", "Latency of each fake model call.", into(duration, func(c *Config) *time.Duration { return &c.Shortcut.FakeLatency })},

	setting("AIJOBS_HEARTBEAT", duration, func(s *settings.Settings) *time.Duration { return &s.Heartbeat },
		"How often a running attempt renews its lease and message visibility."),
	setting("AIJOBS_LEASE_TTL", duration, func(s *settings.Settings) *time.Duration { return &s.LeaseTTL },
		"How far each renewal reaches; a dead worker's job is retried after at most this."),
	setting("AIJOBS_AWS_CALL_TIMEOUT", duration, func(s *settings.Settings) *time.Duration { return &s.AWSCallTimeout },
		"Deadline of every DynamoDB, SQS and S3 call, the SDK's retries included (a long poll's wait is added): a stalled call fails instead of hanging a heartbeat or a finishing write."),
	setting("AIJOBS_LEASE_MARGIN", duration, func(s *settings.Settings) *time.Duration { return &s.LeaseMargin },
		"A call whose lease could not be renewed is stopped this long before the lease ends, on a timer of its own; must exceed the clock skew between workers. 0s: one heartbeat."),
	setting("AIJOBS_ATTEMPT_MARGIN", duration, func(s *settings.Settings) *time.Duration { return &s.AttemptMargin },
		"Added to the model timeout to bound an attempt and its lease."),
	setting("AIJOBS_LAMBDA_MARGIN", duration, func(s *settings.Settings) *time.Duration { return &s.LambdaMargin },
		"The model call ends this long before the worker function's deadline."),
	setting("AIJOBS_BACKOFF_BASE", duration, func(s *settings.Settings) *time.Duration { return &s.BackoffBase },
		"First retry backoff (doubles per attempt, half of it jittered)."),
	setting("AIJOBS_BACKOFF_MAX", duration, func(s *settings.Settings) *time.Duration { return &s.BackoffMax },
		"Longest retry backoff."),
	setting("AIJOBS_REQUEUE_AFTER", duration, func(s *settings.Settings) *time.Duration { return &s.RequeueAfter },
		"The longest wait (a deferral, a retry's backoff) a job's message waits out hidden, counted in flight; a longer wait sends a fresh delayed message and deletes the old one, so waiting jobs never fill SQS's in-flight quota (docs/fairness.md, \"Long waits leave the in-flight count\"). At least 1s."),
	setting("AIJOBS_API_TIMEOUT", duration, func(s *settings.Settings) *time.Duration { return &s.APITimeout },
		"API function timeout (the dev server's gateway gives each request this long). A create validates, hashes and stores its whole input, so one near the 32 MiB upload limit needs more than the default on a small function (docs/payloads.md, \"Limits\"); API Gateway answers itself after 30s."),
	setting("AIJOBS_WORKER_TIMEOUT", duration, func(s *settings.Settings) *time.Duration { return &s.WorkerTimeout },
		"Worker function timeout (the dev server gives each batch this long)."),
	setting("AIJOBS_VISIBILITY_TIMEOUT", duration, func(s *settings.Settings) *time.Duration { return &s.VisibilityTimeout },
		"Job queue visibility timeout; must be at least 6 x worker timeout + batching window, so Lambda can retry a throttled batch before its messages return."),
	setting("AIJOBS_MAX_RECEIVE_COUNT", count, func(s *settings.Settings) *int { return &s.MaxReceiveCount },
		"Receives before SQS moves a message to the DLQ; must exceed twice the max attempts."),
	setting("AIJOBS_BATCH_SIZE", count, func(s *settings.Settings) *int { return &s.BatchSize },
		"Messages per worker invocation (1..10)."),
	setting("AIJOBS_BATCH_WINDOW", duration, func(s *settings.Settings) *time.Duration { return &s.BatchWindow },
		"Longest wait to fill a batch."),
	setting("AIJOBS_MAX_CONCURRENCY", count, func(s *settings.Settings) *int { return &s.MaxConcurrency },
		"Concurrent worker invocations (the event source mapping's MaximumConcurrency). While the buckets table does not answer, each worker holds a provider's rate limit and a tenant's limit in flight to this share of it: the limit over this (docs/ratelimits.md, \"Provider rate limits\")."),

	setting("AIJOBS_CALLBACK_TIMEOUT", duration, func(s *settings.Settings) *time.Duration { return &s.CallbackTimeout },
		"How long one callback delivery may take, connection to answer."),
	setting("AIJOBS_CALLBACK_RETRY_BASE", duration, func(s *settings.Settings) *time.Duration { return &s.CallbackRetryBase },
		"First backoff after a failed delivery (doubles per attempt, half of it jittered)."),
	setting("AIJOBS_CALLBACK_RETRY_MAX", duration, func(s *settings.Settings) *time.Duration { return &s.CallbackRetryMax },
		"Longest backoff between deliveries (at most 12h, SQS's visibility limit)."),
	setting("AIJOBS_CALLBACK_ATTEMPTS", count, func(s *settings.Settings) *int { return &s.CallbackAttempts },
		"Delivery attempts before a notice goes to the callback DLQ; in AWS the schedule must span at least a day."),
	setting("AIJOBS_CALLBACK_ALLOW_LOOPBACK", boolean, func(s *settings.Settings) *bool { return &s.CallbackLoopback },
		"Admit callbacks to loopback addresses over plain http (the dev server sets it); refused by the CDK stack."),
	setting("AIJOBS_NOTIFIER_TIMEOUT", duration, func(s *settings.Settings) *time.Duration { return &s.NotifierTimeout },
		"Notifier function timeout (the dev server gives each batch this long)."),

	setting("AIJOBS_RECONCILE_EVERY", duration, func(s *settings.Settings) *time.Duration { return &s.ReconcileEvery },
		"How often the reconciler runs (its schedule in AWS; a ticker in the dev server). At least 1m."),
	setting("AIJOBS_COLLECT_EVERY", duration, func(s *settings.Settings) *time.Duration { return &s.CollectEvery },
		"How often the batch lane's collector runs: it submits the batches that are due, polls the submitted ones and settles their results (its schedule in AWS, whole minutes, deployed only when a route offers a batch lane; a ticker in the dev server)."),
	setting("AIJOBS_RECONCILE_AFTER", duration, func(s *settings.Settings) *time.Duration { return &s.ReconcileAfter },
		"The reconciler re-sends, through the claim path, a job queued and untouched this long, or running with a lease expired this long ago."),
	setting("AIJOBS_RECONCILE_RESEND_MAX", count, func(s *settings.Settings) *int { return &s.ReconcileResendMax },
		"While the job queue has a backlog, the most queued jobs one reconciler run re-sends (oldest first, each once while the backlog lasts); with none, every stale queued job is re-sent."),

	setting("AIJOBS_DEFAULT_DEADLINE", duration, func(s *settings.Settings) *time.Duration { return &s.Limits.DefaultDeadline },
		"Job deadline when a request gives no `deadline_seconds`."),
	setting("AIJOBS_MAX_DEADLINE", duration, func(s *settings.Settings) *time.Duration { return &s.Limits.MaxDeadline },
		"Largest `deadline_seconds` accepted."),
	setting("AIJOBS_DEFAULT_BUDGET_CENTS", amount, func(s *settings.Settings) *job.Nanocents { return &s.Limits.DefaultBudget },
		"Budget when a request gives no `budget_cents`."),
	setting("AIJOBS_MAX_BUDGET_CENTS", amount, func(s *settings.Settings) *job.Nanocents { return &s.Limits.MaxBudget },
		"Largest `budget_cents` accepted."),
	setting("AIJOBS_DEFAULT_MAX_ATTEMPTS", count, func(s *settings.Settings) *int { return &s.Limits.DefaultMaxAttempts },
		"Attempts when a request gives no `max_attempts`."),
	setting("AIJOBS_MAX_ATTEMPTS", count, func(s *settings.Settings) *int { return &s.Limits.MaxMaxAttempts },
		"Largest `max_attempts` accepted."),
	setting("AIJOBS_DEFAULT_MAX_TOKENS", count, func(s *settings.Settings) *int { return &s.Limits.DefaultMaxTokens },
		"`input.max_tokens` when a request gives none."),
	setting("AIJOBS_MAX_TOKENS", count, func(s *settings.Settings) *int { return &s.Limits.MaxMaxTokens },
		"Largest `input.max_tokens` accepted."),
}

// Markdown renders the variables as docs/configuration.md's table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, v := range vars {
		d := v.Default
		if d == "" {
			d = "(empty)"
		} else {
			d = "`" + d + "`"
		}
		b.WriteString("| `" + v.Name + "` | " + d + " | " + v.Doc + " |\n")
	}
	return b.String()
}
