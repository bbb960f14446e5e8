package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aijobs/aijobs/pkg/advise"
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
attempts x (attempt p99 + rung timeouts) + backoffs.`

// runAdvise prints the decision and its reasons.
func runAdvise(_ context.Context, c *cli, args []string) error {
	fs := c.flagSet("advise", "--p99 DURATION (--awaited | --outlives)", adviseAbout)
	hop := fs.String("hop", "http", "shortest hop on the request path: rest (API Gateway REST, 29s), http (HTTP API, 30s), alb (60s) or a `duration`")
	p99 := fs.Duration("p99", 0, "the call's p99 latency including retries and fallback rungs")
	attemptP99 := fs.Duration("attempt-p99", 0, "instead of --p99: the p99 of one attempt")
	attempts := fs.Int("attempts", 1, "with --attempt-p99: attempts a request may make")
	backoffs := fs.String("backoffs", "", "with --attempt-p99: waits before each retry, comma-separated (attempts-1 of them)")
	rungs := fs.String("rungs", "", "with --attempt-p99: fallback rung timeouts each attempt may walk, comma-separated")
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
	case set["p99"] && planned:
		return usageErrorf("advise: give --p99, or --attempt-p99 with the plan flags, not both")
	case planned:
		if in.P99, err = planP99(*attemptP99, *attempts, *backoffs, *rungs); err != nil {
			return err
		}
	case !set["p99"]:
		return usageErrorf("advise: give --p99 (with retries and fallback rungs) or --attempt-p99")
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "decision\t%s (rule %d)\n", what, d.Rule)
	fmt.Fprintf(tw, "hop\t%s, %s; synchronous up to %s (%d%%)\n", in.Hop.Name, in.Hop.Timeout, d.Limit, advise.HeadroomPercent)
	fmt.Fprintf(tw, "p99\t%s with retries and fallback rungs\n", in.P99)
	for i, r := range d.Reasons {
		k := ""
		if i == 0 {
			k = "why"
		}
		fmt.Fprintf(tw, "%s\t- %s\n", k, r)
	}
	return tw.Flush()
}
