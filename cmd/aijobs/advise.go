package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/advise"
	"github.com/aijobs/aijobs/pkg/job"
)

const adviseAbout = `Decide whether a model call should be served synchronously (stream the
tokens on the open request) or as a job (poll or callback). No API call.

The rule:
  1. work that outlives the user's session (nobody awaits it: batch, e-mail,
     webhook) is a job, whatever its latency;
  2. awaited work whose p99 WITH retries and fallback rungs is over 80% of
     the shortest hop's timeout is a job: that hop would cut the slowest
     requests, the cut call is still billed, and the retry pays again;
  3. awaited work that fits is synchronous, streaming the tokens.

Give the p99 with retries (--p99), or the per-attempt p99 and the plan
(--attempt-p99, --attempts, --backoffs, --rungs), computed as
attempts x (attempt p99 + rung timeouts) + backoffs, or measure it
(--from-table): the p99 over finished jobs of a route (--model) of the
time their attempts ran, fallback rungs included, plus the backoffs their
retries waited (the configured backoff at the top of its jitter). That
reads the jobs table with your AWS credentials (a scan of --sample jobs).`

// runAdvise prints the decision and its reasons.
func runAdvise(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("advise", "--p99 DURATION (--awaited | --outlives)", adviseAbout)
	hop := fs.String("hop", "http", "shortest hop on the request path: rest (API Gateway REST, 29s), http (HTTP API, 30s), alb (60s) or a `duration`")
	p99 := fs.Duration("p99", 0, "the call's p99 latency including retries and fallback rungs")
	attemptP99 := fs.Duration("attempt-p99", 0, "instead of --p99: the p99 of one attempt")
	attempts := fs.Int("attempts", 1, "with --attempt-p99: attempts a request may make")
	backoffs := fs.String("backoffs", "", "with --attempt-p99: waits before each retry, comma-separated (attempts-1 of them)")
	rungs := fs.String("rungs", "", "with --attempt-p99: fallback rung timeouts each attempt may walk, comma-separated")
	fromTable := fs.Bool("from-table", false, "measure the p99 from the jobs table's finished jobs of --model")
	model := fs.String("model", "default", "with --from-table: the route whose jobs to measure")
	sample := fs.Int("sample", 1000, "with --from-table: how many finished jobs to read")
	lanes := fs.Bool("lanes", false, "with --from-table: also measure each cost lane's p99 (one more read a job)")
	var af awsFlags
	af.register(fs, false)
	outlives := fs.Bool("outlives", false, "the work outlives the user's session: nobody awaits the answer")
	awaited := fs.Bool("awaited", false, "a user or caller awaits the answer")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *outlives == *awaited {
		return usageErrorf("advise: give exactly one of --outlives and --awaited")
	}
	h, err := advise.ParseHop(*hop)
	if err != nil {
		return usageErrorf("advise: --%v", err)
	}
	in := advise.Input{Hop: h, P99: *p99, OutlivesSession: *outlives}
	planned := set["attempt-p99"] || set["attempts"] || set["backoffs"] || set["rungs"]
	switch {
	case set["p99"] && planned, *fromTable && (set["p99"] || planned):
		return usageErrorf("advise: give one of --p99, --attempt-p99 with the plan flags, or --from-table, not both")
	case *fromTable:
		if in.P99, err = c.measuredP99(ctx, af, measure{route: *model, sample: *sample, lanes: *lanes}); err != nil {
			return err
		}
	case planned:
		if in.P99, err = planP99(*attemptP99, *attempts, *backoffs, *rungs); err != nil {
			return err
		}
	case !set["p99"]:
		return usageErrorf("advise: give --p99 (with retries and fallback rungs), --attempt-p99 or --from-table")
	}
	d, err := advise.Decide(in)
	if err != nil {
		return usageErrorf("%v", err)
	}
	format, err := c.format()
	if err != nil {
		return err
	}
	return printDecision(c.env.stdout, format, in, d)
}

// measure is what --from-table measures: the route, how many of its
// finished jobs, and whether each lane's p99 too.
type measure struct {
	route  string
	sample int
	lanes  bool
}

// measuredP99 is the p99 of what the finished jobs of the route took to
// run, retries and fallback rungs included, plus the backoffs between
// retries.
func (c *cli) measuredP99(ctx context.Context, af awsFlags, m measure) (time.Duration, error) {
	model, sample := m.route, m.sample
	if sample < 1 {
		return 0, usageErrorf("advise: --sample must be at least 1")
	}
	op, err := c.operator(ctx, af, nil)
	if err != nil {
		return 0, err
	}
	s := op.cfg.Settings
	var took []time.Duration
	var ids []string
	now := time.Now()
	if c.env.now != nil {
		now = c.env.now()
	}
	// Back as far as any record is kept (a year at most: the store walks
	// the days): the sample is the newest jobs.
	keep := min(max(s.Retention.Succeeded, s.Retention.Failed), 365*24*time.Hour)
	q := job.FinishedQuery{Model: model, Limit: sample, Since: now.Add(-keep), Now: now}
	err = op.store.Finished(ctx, q, func(j job.Job) error {
		d := j.RunTime
		for k := 1; k < j.Attempts; k++ {
			d += job.Backoff(k, s.BackoffBase, s.BackoffMax, 1)
		}
		took, ids = append(took, d), append(ids, j.ID)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("advise: read finished jobs: %w", err)
	}
	if len(took) == 0 {
		return 0, usageErrorf("advise: no finished jobs of route %q in the table to measure", model)
	}
	p99, err := advise.P99(took)
	if err != nil {
		return 0, usageErrorf("advise: %v", err)
	}
	fmt.Fprintf(c.env.stderr, "measured over %d finished jobs of route %q: p99 %s\n", len(took), model, p99)
	if m.lanes {
		return p99, laneP99s(ctx, c.env.stderr, op.store, ids)
	}
	return p99, nil
}

// laneP99s prints, for each cost lane, the p50 and p99 of how long the
// jobs of ids that succeeded in it at their first attempt ran: the
// figure a rung's lane configures as its p99 (docs/lanes.md,
// "Cost lanes"). A batch job ran from its batch's opening to its
// settlement. The index the sample comes from projects no lane, so each
// job's record is read.
func laneP99s(ctx context.Context, w io.Writer, store interface {
	Get(context.Context, string) (job.Job, error)
}, ids []string) error {
	byLane := map[job.Lane][]time.Duration{}
	for _, id := range ids {
		j, err := store.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("advise: read job %s: %w", id, err)
		}
		if j.State == job.Succeeded && j.Attempts == 1 && j.ResultLane != "" {
			byLane[j.ResultLane] = append(byLane[j.ResultLane], j.RunTime)
		}
	}
	for _, l := range job.Lanes() {
		d := byLane[l]
		if len(d) == 0 {
			continue
		}
		p99, err := advise.P99(d)
		if err != nil {
			return err
		}
		slices.Sort(d)
		fmt.Fprintf(w, "lane %s: %d jobs succeeded at their first attempt, p50 %s, p99 %s\n", l, len(d), d[len(d)/2], p99)
	}
	return nil
}

func planP99(attempt time.Duration, attempts int, backoffs, rungs string) (time.Duration, error) {
	p := advise.Plan{AttemptP99: attempt, Attempts: attempts}
	var err error
	if p.Backoffs, err = durations("backoffs", backoffs); err != nil {
		return 0, err
	}
	if p.Rungs, err = durations("rungs", rungs); err != nil {
		return 0, err
	}
	d, err := p.P99WithRetries()
	if err != nil {
		return 0, usageErrorf("advise: %v", err)
	}
	return d, nil
}

func durations(flagName, s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return nil, usageErrorf("advise: --%s: %q is not a duration", flagName, part)
		}
		out = append(out, d)
	}
	return out, nil
}

// decisionJSON is advise's JSON output; durations in seconds.
type decisionJSON struct {
	Mode            advise.Mode `json:"mode"`
	Rule            int         `json:"rule"`
	Hop             string      `json:"hop"`
	HopSeconds      float64     `json:"hop_seconds"`
	LimitSeconds    float64     `json:"limit_seconds"`
	P99Seconds      float64     `json:"p99_seconds"`
	OutlivesSession bool        `json:"outlives_session"`
	Reasons         []string    `json:"reasons"`
}

func printDecision(w io.Writer, format string, in advise.Input, d advise.Decision) error {
	if format == "json" {
		return printJSON(w, decisionJSON{
			Mode: d.Mode, Rule: int(d.Rule), Hop: in.Hop.Name, HopSeconds: in.Hop.Timeout.Seconds(),
			LimitSeconds: d.Limit.Seconds(), P99Seconds: in.P99.Seconds(), OutlivesSession: in.OutlivesSession,
			Reasons: d.Reasons,
		})
	}
	what := "synchronous: answer on the open request, stream the tokens"
	if d.Mode == advise.Async {
		what = "asynchronous: a job, then a poll or a callback"
	}
	t := newTable(w)
	t.row("decision", fmt.Sprintf("%s (rule %d)", what, d.Rule))
	t.row("hop", fmt.Sprintf("%s, %s; synchronous up to %s (%d%%)", in.Hop.Name, in.Hop.Timeout, d.Limit, advise.HeadroomPercent))
	t.row("p99", fmt.Sprintf("%s with retries and fallback rungs", in.P99))
	for i, r := range d.Reasons {
		k := ""
		if i == 0 {
			k = "why"
		}
		t.row(k, "- "+r)
	}
	return t.flush()
}
