package chaos

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/settings"
)

// timings are the engine's timings for a run, through its own variables:
// the production rules (docs/architecture.md, "Timing rules") scaled down
// about ten times (heartbeat 10 s -> 1 s, a model call's timeout 120 s ->
// 6 s) so a run takes minutes. The reconciler cannot go below its
// schedule's one minute (settings.Validate), so lost messages take the
// same time to recover as in production. The worker's timeout holds the
// longest route's attempt (settings.Validate): the plain route's lanes
// one after another (flex 9 s, standard 6 s, priority 3 s), the attempt
// margin and the Lambda margin; it was 10 s, the 6 s rung's, before the
// lanes, and the visibility timeout keeps 2 s above it.
var timings = map[string]string{
	"AIJOBS_HEARTBEAT":            "1s",
	"AIJOBS_LEASE_TTL":            "6s",
	"AIJOBS_LEASE_MARGIN":         "3s",
	"AIJOBS_ATTEMPT_MARGIN":       "3s",
	"AIJOBS_AWS_CALL_TIMEOUT":     "2s",
	"AIJOBS_LAMBDA_MARGIN":        "1s",
	"AIJOBS_MODEL_TIMEOUT":        "6s",
	"AIJOBS_WORKER_TIMEOUT":       "22s",
	"AIJOBS_VISIBILITY_TIMEOUT":   "24s",
	"AIJOBS_BATCH_SIZE":           "5",
	"AIJOBS_BATCH_WINDOW":         "0s",
	"AIJOBS_MAX_CONCURRENCY":      "4",
	"AIJOBS_BACKOFF_BASE":         "200ms",
	"AIJOBS_BACKOFF_MAX":          "3s",
	"AIJOBS_RECONCILE_EVERY":      "1m",
	"AIJOBS_RECONCILE_AFTER":      "1m",
	"AIJOBS_DEFAULT_MAX_ATTEMPTS": "3",
	"AIJOBS_MAX_ATTEMPTS":         "3",
	"AIJOBS_MAX_RECEIVE_COUNT":    "7",
	"AIJOBS_DEFAULT_MAX_TOKENS":   "32",
	"AIJOBS_MAX_TOKENS":           "64",
	// Every create enters its tenant's queued set and every first call
	// leaves it, under the AWS faults; the limit is far above a run's
	// jobs, so a set that only grows (leaves lost) still refuses nothing.
	"AIJOBS_TENANT_QUEUED": "1000",
	// Three tenants at spend limits their jobs pass (spend.go).
	"AIJOBS_TENANT_SPEND": spendText(),
	"AIJOBS_LOG_LEVEL":    "warn",
	"AIJOBS_METRICS":      "off",
}

// skew is how far each worker process's clock is off (one behind, one
// ahead): 2 s apart, under the lease margin (3 s), the skew the lease guard
// tolerates (docs/architecture.md, "Timing rules").
const skew = time.Second

// baselineVisibility is SQS's default visibility timeout (30 s) on the
// same scale as the engine's timings.
const baselineVisibility = 3 * time.Second

// The routes: one streaming, one not, one that falls back from a stream to
// a plain rung, and two on the Responses API's background shape, whose
// generations a worker taking over a killed one's job resumes instead of
// paying again (docs/resume.md, "Resuming a paid generation"), the
// second detached (docs/resume.md, "Detached routes"). Model
// names are unique per rung, so the model server's ledger prices each
// generation by the model it was asked for. Every price states its cached
// input rate, a tenth of the input's as OpenAI's (platform.openai.com/
// docs/pricing): the model server reports cached prompt tokens (usage.go),
// and a cached token must cost visibly less on the record and the bill.
func routesJSON(modelURL, who string) string {
	base := modelURL + "/w/" + who + "/v1"
	doc := map[string]any{
		"providers": map[string]any{
			"stream": map[string]any{"kind": "openai", "base_url": base, "stream": true},
			// The plain key declares limits well above the run's rate: its
			// calls take from a shared bucket under the AWS faults, and the
			// model's injected 429s pause it and defer their jobs.
			"plain": map[string]any{"kind": "openai", "base_url": base, "stream": false,
				"limits": map[string]int{"requests_per_minute": 6000, "tokens_per_minute": 6_000_000}},
			// Polled every 100 ms: production's default second on the
			// run's ten-times scale.
			"background": map[string]any{"kind": "openai", "base_url": base, "background": true, "poll_every": "100ms"},
		},
		"routes": map[string]any{
			"default": map[string]any{"rungs": []any{
				map[string]any{"provider": "stream", "model": "chaos-stream", "price": map[string]string{"input": "100", "output": "400", "cached_input": "10"}, "max_tokens": 64, "timeout": "6s"},
			}},
			"plain": map[string]any{"rungs": []any{
				map[string]any{"provider": "plain", "model": "chaos-plain", "price": map[string]string{"input": "150", "output": "600", "cached_input": "15"}, "max_tokens": 64, "timeout": "6s",
					"p99": "3700ms", "lanes": lanesOfPlain},
			}},
			"ladder": map[string]any{
				"rungs": []any{
					map[string]any{"provider": "stream", "model": "chaos-ladder-1", "price": map[string]string{"input": "120", "output": "480", "cached_input": "12"}, "max_tokens": 64, "timeout": "3s"},
					map[string]any{"provider": "plain", "model": "chaos-ladder-2", "price": map[string]string{"input": "80", "output": "320", "cached_input": "8"}, "max_tokens": 64, "timeout": "3s"},
				},
				"fallback_on": []string{"rate_limited", "overloaded", "provider_error", "timeout", "network"},
			},
			"background": map[string]any{"rungs": []any{
				map[string]any{"provider": "background", "model": "chaos-background", "price": map[string]string{"input": "140", "output": "560", "cached_input": "14"}, "max_tokens": 64, "timeout": "6s"},
			}},
			// The same provider, detached: a worker starts the generation
			// and returns, and delayed messages reattach it
			// (docs/resume.md, "Detached routes").
			"detached": map[string]any{"rungs": []any{
				map[string]any{"provider": "background", "model": "chaos-detached", "price": map[string]string{"input": "130", "output": "520", "cached_input": "13"}, "max_tokens": 64, "timeout": "6s", "detached": true},
			}},
		},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// lanesOfPlain are the plain rung's other lanes (docs/lanes.md,
// "Cost lanes"): flex at half the price, priority at 1.75 times (cached
// input too). A priority request the model server serves at standard
// (its ramp limit) is billed at the rung's own price. The p99s
// follow the model server's pace (modelserver.go: flex twice slower,
// priority twice as fast) over a fault-free plan (Schedule.Gen: at most
// 40 tokens of 30-100 ms after 50-300 ms), 4.3 s at worst and 3.7 s at
// the 99th percentile in the standard lane: a job with 7.5 s or more
// left takes flex first, one with 3.7 to 7.5 s standard, one with less
// priority. Each timeout is above its lane's worst fault-free answer,
// but for a priority request served at standard: it runs at standard's
// pace, as a downgraded one does, and may outlast priority's 3 s.
var lanesOfPlain = map[string]any{
	"flex":     map[string]any{"price": map[string]string{"input": "75", "output": "300", "cached_input": "7.5"}, "timeout": "9s", "p99": "7500ms"},
	"priority": map[string]any{"price": map[string]string{"input": "262.5", "output": "1050", "cached_input": "26.25"}, "timeout": "3s", "p99": "2s"},
}

// faultTimes are the AWS stalls for s: past the heartbeat, up to past the
// lease; a hung request waits up to more than two leases.
func faultTimes(s settings.Settings) (stallMin, stallMax, hangMax time.Duration) {
	return s.Heartbeat * 3 / 2, s.LeaseTTL * 8 / 5, s.LeaseTTL * 12 / 5
}

// env is the engine's environment for a process of the run.
func env(endpoint, prefix, modelURL, who string) map[string]string {
	e := map[string]string{
		"AWS_ENDPOINT_URL": endpoint,
		"AWS_REGION":       "us-east-1",
		"AIJOBS_PREFIX":    prefix,
		"AIJOBS_ROUTES":    routesJSON(modelURL, who),
	}
	for k, v := range timings {
		e[k] = v
	}
	return e
}

func lookup(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	return out
}
