package config

import (
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

var vars = []Var{
	{"AWS_REGION", "us-east-1", "AWS region.", str(func(c *Config) *string { return &c.Region })},
	{"AWS_ENDPOINT_URL", "", "AWS endpoint for every service: kumo or LocalStack (`http://127.0.0.1:4566`); empty means real AWS. `make dev` sets it to its kumo; tests use it when set, else each test binary starts its own kumo.", str(func(c *Config) *string { return &c.Endpoint })},
	{"AIJOBS_PREFIX", "aijobs", "Resource name prefix: table `<prefix>-jobs`, queues `<prefix>-jobs` and `<prefix>-jobs-dlq`.", str(func(c *Config) *string { return &c.Settings.Prefix })},
	{"AIJOBS_TABLE", "", "Jobs table name (the CDK stack sets it; default `<prefix>-jobs`).", str(func(c *Config) *string { return &c.Table })},
	{"AIJOBS_QUEUE_URL", "", "Job queue URL (the CDK stack sets it; the dev server creates the queue and finds it).", str(func(c *Config) *string { return &c.QueueURL })},
	{"AIJOBS_DLQ_URL", "", "Dead letter queue URL, where the worker sends poison messages itself.", str(func(c *Config) *string { return &c.DLQURL })},
	{"AIJOBS_LISTEN", "127.0.0.1:8080", "Dev server listen address.", str(func(c *Config) *string { return &c.Listen })},
	{"AIJOBS_METRICS", "emf", "Worker metrics: `emf` (CloudWatch Embedded Metric Format lines on stdout) or `off`. `make dev` sets `off`.", str(func(c *Config) *string { return &c.Metrics })},
	{"AIJOBS_LOG_LEVEL", "info", "Log level: debug, info, warn, error.", str(func(c *Config) *string { return &c.LogLevel })},

	{"AIJOBS_ROUTES", "", "Model routes and their providers, as one JSON document (see Model routes above): each route an ordered list of rungs (provider, model, price, max tokens, timeout) and the error classes it falls back on. Empty: one `default` route from the variables below.", str(func(c *Config) *string { return &c.Routes })},
	{"AIJOBS_MODEL_PROVIDER", "", "Without AIJOBS_ROUTES: provider of the `default` route, `fake` or `openai`. Empty: `openai` when OPENAI_BASE_URL is set, else `fake`.", str(func(c *Config) *string { return &c.Provider.Kind })},
	{"OPENAI_BASE_URL", "", "OpenAI-compatible API base URL (OpenAI, vLLM, Ollama, LiteLLM), e.g. `https://api.openai.com/v1`. Setting it switches the default route to it.", str(func(c *Config) *string { return &c.Provider.BaseURL })},
	{"OPENAI_API_KEY", "", "API key sent as a bearer token. Never logged.", str(func(c *Config) *string { return &c.Provider.APIKey })},
	{"AIJOBS_OPENAI_MODEL", "gpt-4o-mini", "Model id sent to the OpenAI-compatible server.", str(func(c *Config) *string { return &c.Provider.Model })},
	{"AIJOBS_OPENAI_STREAM", "true", "Stream responses (drives job progress; usage is requested in the stream).", boolean(func(c *Config) *bool { return &c.Provider.Stream })},
	{"AIJOBS_PRICE_INPUT", "15", "Price of input tokens, cents per million tokens (at most 3 decimals).", price(false)},
	{"AIJOBS_PRICE_OUTPUT", "60", "Price of output tokens, cents per million tokens.", price(true)},
	{"AIJOBS_PRICES", "", "Per-model price table for the OpenAI-compatible server, `model=input:output,...` in cents per million tokens (e.g. `gpt-4o-mini=15:60,gpt-4o=250:1000`); a listed model overrides AIJOBS_PRICE_INPUT/OUTPUT.", priceTable},
	{"AIJOBS_MODEL_TIMEOUT", "120s", "Timeout of one model call (one rung); the default of a rung that names none.", dur(func(c *Config) *time.Duration { return &c.Provider.Timeout })},
	{"AIJOBS_FAKE_LATENCY", "500ms", "Latency of each fake model call.", dur(func(c *Config) *time.Duration { return &c.Provider.FakeLatency })},

	{"AIJOBS_HEARTBEAT", "10s", "How often a running attempt renews its lease and message visibility.", dur(func(c *Config) *time.Duration { return &c.Settings.Heartbeat })},
	{"AIJOBS_LEASE_TTL", "30s", "How far each renewal reaches; a dead worker's job is retried after at most this.", dur(func(c *Config) *time.Duration { return &c.Settings.LeaseTTL })},
	{"AIJOBS_AWS_CALL_TIMEOUT", "5s", "Deadline of every DynamoDB and SQS call, the SDK's retries included (a long poll's wait is added): a stalled call fails instead of hanging a heartbeat or a finishing write.", dur(func(c *Config) *time.Duration { return &c.Settings.AWSCallTimeout })},
	{"AIJOBS_LEASE_MARGIN", "0s", "A call whose lease could not be renewed is stopped this long before the lease ends, on a timer of its own; must exceed the clock skew between workers. 0s: one heartbeat.", dur(func(c *Config) *time.Duration { return &c.Settings.LeaseMargin })},
	{"AIJOBS_ATTEMPT_MARGIN", "10s", "Added to the model timeout to bound an attempt and its lease.", dur(func(c *Config) *time.Duration { return &c.Settings.AttemptMargin })},
	{"AIJOBS_LAMBDA_MARGIN", "10s", "The model call ends this long before the worker function's deadline.", dur(func(c *Config) *time.Duration { return &c.Settings.LambdaMargin })},
	{"AIJOBS_BACKOFF_BASE", "2s", "First retry backoff (doubles per attempt, half of it jittered).", dur(func(c *Config) *time.Duration { return &c.Settings.BackoffBase })},
	{"AIJOBS_BACKOFF_MAX", "5m", "Longest retry backoff.", dur(func(c *Config) *time.Duration { return &c.Settings.BackoffMax })},
	{"AIJOBS_WORKER_TIMEOUT", "180s", "Worker function timeout (the dev server gives each batch this long).", dur(func(c *Config) *time.Duration { return &c.Settings.WorkerTimeout })},
	{"AIJOBS_VISIBILITY_TIMEOUT", "1082s", "Job queue visibility timeout; must be at least 6 x worker timeout + batching window, so Lambda can retry a throttled batch before its messages return.", dur(func(c *Config) *time.Duration { return &c.Settings.VisibilityTimeout })},
	{"AIJOBS_MAX_RECEIVE_COUNT", "20", "Receives before SQS moves a message to the DLQ; must exceed twice the max attempts.", integer(func(c *Config) *int { return &c.Settings.MaxReceiveCount })},
	{"AIJOBS_BATCH_SIZE", "5", "Messages per worker invocation (1..10).", integer(func(c *Config) *int { return &c.Settings.BatchSize })},
	{"AIJOBS_BATCH_WINDOW", "2s", "Longest wait to fill a batch.", dur(func(c *Config) *time.Duration { return &c.Settings.BatchWindow })},
	{"AIJOBS_MAX_CONCURRENCY", "10", "Concurrent worker invocations (the event source mapping's MaximumConcurrency).", integer(func(c *Config) *int { return &c.Settings.MaxConcurrency })},

	{"AIJOBS_RECONCILE_EVERY", "5m", "How often the reconciler runs (its schedule in AWS; a ticker in the dev server). At least 1m.", dur(func(c *Config) *time.Duration { return &c.Settings.ReconcileEvery })},
	{"AIJOBS_RECONCILE_AFTER", "10m", "The reconciler re-sends, through the claim path, a job queued and untouched this long, or running with a lease expired this long ago.", dur(func(c *Config) *time.Duration { return &c.Settings.ReconcileAfter })},
	{"AIJOBS_RECONCILE_RESEND_MAX", "100", "While the job queue has a backlog, the most queued jobs one reconciler run re-sends (oldest first, each once while the backlog lasts); with none, every stale queued job is re-sent.", integer(func(c *Config) *int { return &c.Settings.ReconcileResendMax })},

	{"AIJOBS_DEFAULT_DEADLINE", "15m", "Job deadline when a request gives no `deadline_seconds`.", dur(func(c *Config) *time.Duration { return &c.Settings.Limits.DefaultDeadline })},
	{"AIJOBS_MAX_DEADLINE", "24h", "Largest `deadline_seconds` accepted.", dur(func(c *Config) *time.Duration { return &c.Settings.Limits.MaxDeadline })},
	{"AIJOBS_DEFAULT_BUDGET_CENTS", "50", "Budget when a request gives no `budget_cents`.", cents(func(c *Config) *job.Nanocents { return &c.Settings.Limits.DefaultBudget })},
	{"AIJOBS_MAX_BUDGET_CENTS", "10000", "Largest `budget_cents` accepted.", cents(func(c *Config) *job.Nanocents { return &c.Settings.Limits.MaxBudget })},
	{"AIJOBS_DEFAULT_MAX_ATTEMPTS", "4", "Attempts when a request gives no `max_attempts`.", integer(func(c *Config) *int { return &c.Settings.Limits.DefaultMaxAttempts })},
	{"AIJOBS_MAX_ATTEMPTS", "8", "Largest `max_attempts` accepted.", integer(func(c *Config) *int { return &c.Settings.Limits.MaxMaxAttempts })},
	{"AIJOBS_DEFAULT_MAX_TOKENS", "1024", "`input.max_tokens` when a request gives none.", integer(func(c *Config) *int { return &c.Settings.Limits.DefaultMaxTokens })},
	{"AIJOBS_MAX_TOKENS", "32768", "Largest `input.max_tokens` accepted.", integer(func(c *Config) *int { return &c.Settings.Limits.MaxMaxTokens })},
}

// Markdown renders the variables as the README's configuration table.
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
