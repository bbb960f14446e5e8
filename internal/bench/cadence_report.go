package bench

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// PollCostPerMillion is what polling costs per million jobs at Prices:
// each poll is one API Gateway HTTP API request and one API Lambda
// invocation (its GB-seconds are left out), and the run's GetItems are
// priced by consistency, as CostPerMillion does.
func (r CadenceRun) PollCostPerMillion() float64 {
	perJob := func(n float64) float64 { return n / float64(max(r.Jobs, 1)) }
	units := float64(r.GetItems.Consistent) + eventualReadUnit*float64(r.GetItems.Eventual)
	return 1e6 * (perJob(float64(r.Polls))*(Prices.HTTPAPIRequest+Prices.LambdaRequest) + perJob(units)*Prices.DynamoDBReadUnit)
}

// CadenceReport renders the runs as Markdown.
func CadenceReport(runs []CadenceRun) string {
	var b strings.Builder
	b.WriteString("| model latency | jobs | 202s with Retry-After | GETs' Retry-After: s x times | polls / job | 304s / job | lag p50 | lag p90 | GetItem / poll, consistent | GetItem / poll, eventual | polls' $ / million jobs |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	var unfinished []string
	for _, r := range runs {
		perPoll := func(n int) float64 { return float64(n) / float64(max(r.Polls, 1)) }
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %.2f | %.2f | %s | %s | %.2f | %.2f | %.2f |\n", r.Latency, r.Jobs, r.PostRetryAfter, tally(r.RetryAfters),
			r.perJob(r.Polls), r.perJob(r.NotModified), seconds(Percentile(r.Lags, 50)), seconds(Percentile(r.Lags, 90)),
			perPoll(r.GetItems.Consistent), perPoll(r.GetItems.Eventual), r.PollCostPerMillion())
		if r.NotTerminal > 0 {
			unfinished = append(unfinished, fmt.Sprintf("%d of %d at %s", r.NotTerminal, r.Jobs, r.Latency))
		}
	}
	if len(unfinished) > 0 {
		// Their clients gave up: the run's polls and lags leave them out.
		fmt.Fprintf(&b, "\n**Jobs never seen terminal: %s.**\n", strings.Join(unfinished, "; "))
	}
	b.WriteString("\nEach client waits the 202's Retry-After (1 s without one), then polls with If-None-Match and waits each answer's Retry-After (1 s without one) until the job is terminal. " +
		"Lag: when the client saw the job terminal minus the job's updated_at (one host clock). " +
		"GetItems include the worker's few reads. Polls' $: API Gateway and API Lambda requests plus read units.\n")
	return b.String()
}

func (r CadenceRun) perJob(n int) float64 { return float64(n) / float64(max(r.Jobs, 1)) }

// seconds writes d in seconds with two decimals.
func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// tally writes counts by value, smallest value first: "1x170, 2x40";
// "none" when empty.
func tally(counts map[int]int) string {
	if len(counts) == 0 {
		return "none"
	}
	keys := make([]int, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%dx%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
