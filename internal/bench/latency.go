package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// LatencyOptions are the by-latency runs' knobs.
type LatencyOptions struct {
	Endpoint  string
	Latencies []time.Duration
	// Jobs per run; every job is in flight at once (one client each).
	Jobs int
	// BatchSize and BatchWindow are the batched runs' event source
	// mapping; each latency also runs with batch size 1 and as many
	// concurrent invocations as jobs, as Lambda would scale.
	BatchSize   int
	BatchWindow time.Duration
	// PollEvery is the clients' shortest poll interval; they poll every
	// latency/10 when that is longer.
	PollEvery time.Duration
}

// LatencyRun is one latency's batched and one-message-per-invocation runs.
type LatencyRun struct {
	Latency         time.Duration
	Batched, Single Result
}

// ByLatency runs every latency, batched and with batch size 1, all at
// once (the runs mostly wait on the fake model, so they barely disturb one
// another), each on its own dev server and resources.
func ByLatency(ctx context.Context, o LatencyOptions) ([]LatencyRun, error) {
	out := make([]LatencyRun, len(o.Latencies))
	errs := make([]error, 2*len(o.Latencies))
	var wg sync.WaitGroup
	for i, l := range o.Latencies {
		out[i].Latency = l
		base := Options{Endpoint: o.Endpoint, Jobs: o.Jobs, Concurrency: o.Jobs, PollEvery: max(o.PollEvery, l/10), Latency: l}
		batched, single := base, base
		// Enough invocations for every job at once (Lambda's minimum is 2).
		batched.BatchSize, batched.BatchWindow, batched.MaxConcurrency = o.BatchSize, o.BatchWindow, max((o.Jobs+o.BatchSize-1)/o.BatchSize, 2)
		single.BatchSize, single.MaxConcurrency = 1, max(o.Jobs, 2)
		wg.Add(2)
		go func() { defer wg.Done(); out[i].Batched, errs[2*i] = Run(ctx, batched) }()
		go func() { defer wg.Done(); out[i].Single, errs[2*i+1] = Run(ctx, single) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// perJob is n per job of r.
func (r Result) perJob(n float64) float64 { return n / float64(max(r.Jobs, 1)) }

// calls counts r's calls of the operations named (all when none).
func (r Result) calls(ops ...string) int {
	t := 0
	for op, n := range r.Calls {
		if len(ops) == 0 {
			t += n
		}
		for _, o := range ops {
			if o == op {
				t += n
			}
		}
	}
	return t
}

// LatencyReport renders the runs as Markdown.
func LatencyReport(runs []LatencyRun) string {
	var b strings.Builder
	b.WriteString("| model latency | batch size | jobs | invocations / job | worker GB-s / job | one-per-invocation / batched | AWS calls / job without polls | heartbeat calls / job | polls / job |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		for _, x := range []struct {
			res   Result
			batch string
		}{{r.Batched, "batched"}, {r.Single, "1"}} {
			ratio := ""
			if x.batch == "batched" {
				ratio = fmt.Sprintf("**%.1fx**", r.Single.Worker.GBSeconds/max(r.Batched.Worker.GBSeconds, 1e-12))
				x.batch = fmt.Sprintf("%d (%.1f per invocation)", r.Batched.BatchSize, float64(r.Batched.Jobs)/float64(max(r.Batched.Worker.Invocations, 1)))
			}
			res := x.res
			fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.4f | %s | %.2f | %.2f | %.2f |\n", r.Latency, x.batch, res.Jobs,
				res.perJob(float64(res.Worker.Invocations)), res.perJob(res.Worker.GBSeconds), ratio,
				res.perJob(float64(res.calls()-res.calls("DynamoDB.GetItem"))), res.perJob(float64(res.heartbeatCalls())),
				res.perJob(float64(res.Polls)))
		}
	}
	b.WriteString("\nHeartbeat calls are the SQS.ChangeMessageVisibility(Batch) and DynamoDB.UpdateItem calls beyond the claim's one and two per job (claim, finish).\n")
	return b.String()
}

// heartbeatCalls are the visibility extensions and lease writes beyond
// the happy path's fixed ones: one ChangeMessageVisibility (at the claim)
// and two UpdateItems (claim, finish) per job. The heartbeats' batched
// extensions (one ChangeMessageVisibilityBatch per invocation and beat)
// all count.
func (r Result) heartbeatCalls() int {
	return max(r.calls("SQS.ChangeMessageVisibility")-r.Jobs, 0) + r.calls("SQS.ChangeMessageVisibilityBatch") +
		max(r.calls("DynamoDB.UpdateItem")-2*r.Jobs, 0)
}

// Parse reads a comma-separated list of latencies ("none" for none), for
// a flag.
func (o *LatencyOptions) Parse(v string) (err error) {
	o.Latencies, err = parseLatencies(v)
	return err
}

// parseLatencies reads a comma-separated list of latencies, none for
// "none" or "".
func parseLatencies(v string) ([]time.Duration, error) {
	if v == "none" || v == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("latency %q: want a duration like 30s", f)
		}
		out = append(out, d)
	}
	return out, nil
}
