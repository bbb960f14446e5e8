package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/replay"
)

const replayAbout = `Send jobs back through the claim path: from the dead letter queue (--from dlq)
or from the failures of a time range (--from failures, with the same
--class/--since/--until as the failures command). A job that already
succeeded is skipped and counted, never run again; a job a live worker
holds is skipped; a failed job is replayed by an explicit, recorded
transition with fresh attempts (--attempts, at most what its remaining
budget covers; none fits: refused for budget); a job still queued or whose
worker died is re-sent. Dead letters are deleted once their job is handled;
unreadable ones stay. --dry-run decides everything and changes nothing.
Reads and writes DynamoDB and SQS with your AWS credentials (the stack's
operator policy). Exit code 4 when any job hit an error.`

// replayReport is the JSON output of replay.
type replayReport struct {
	From     string         `json:"from"`
	DryRun   bool           `json:"dry_run"`
	Total    int            `json:"total"`
	Outcomes map[string]int `json:"outcomes"`
	Seconds  float64        `json:"seconds"`
	PerSec   float64        `json:"jobs_per_second"`
}

// runReplay replays jobs.
func runReplay(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("replay", "--from dlq|failures", replayAbout)
	var af awsFlags
	af.register(fs, true)
	from := fs.String("from", "", "where the job ids come from: `dlq` or failures")
	classes := fs.String("class", "", "with --from failures: only these error `classes`, comma-separated")
	since := fs.String("since", "24h", "with --from failures: from this `time` (RFC 3339, or a duration back)")
	until := fs.String("until", "", "with --from failures: until this `time` (default: now)")
	limit := fs.Int("limit", 0, "with --from dlq: at most this many messages (default: all)")
	attempts := fs.Int("attempts", 3, "fresh attempts a failed job gets, at most what its remaining budget covers")
	rate := fs.Float64("rate", 50, "at most this many jobs a second (0: no limit)")
	parallel := fs.Int("parallel", 8, "jobs in flight at once")
	dry := fs.Bool("dry-run", false, "decide every outcome, change nothing")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *from != "dlq" && *from != "failures":
		return usageErrorf("replay: --from %q: want dlq or failures", *from)
	case *attempts < 1 || *parallel < 1 || *rate < 0 || *limit < 0:
		return usageErrorf("replay: --attempts and --parallel must be at least 1, --rate and --limit not negative")
	}
	format, op, err := c.connectOperator(ctx, af)
	if err != nil {
		return err
	}
	op.findQueues(ctx)
	if op.cfg.QueueURL == "" || (*from == "dlq" && op.cfg.DLQURL == "") {
		return usageErrorf("replay: needs the queue URLs: --queue-url and --dlq-url, AIJOBS_QUEUE_URL and AIJOBS_DLQ_URL, or the AIJOBS_PREFIX that names them")
	}
	r := replay.New(replay.Config{Store: op.store, Queue: op.queue, DeadLetters: op.queue.DeadLetters(), Retention: op.cfg.Settings.Retention, Limits: op.cfg.Settings.Limits})
	bar := &replayBar{w: c.env.stdout, on: c.env.stdoutTTY, counts: map[replay.Outcome]int{}}
	o := replay.Options{DryRun: *dry, Attempts: *attempts, Rate: *rate, Parallel: *parallel, Progress: bar.add}
	start := time.Now()
	var sum replay.Summary
	if *from == "dlq" {
		sum, err = r.DeadLetters(ctx, *limit, o)
	} else {
		q, qerr := c.failureQuery(*classes, *since, *until)
		if qerr != nil {
			return qerr
		}
		sum, err = r.Failures(ctx, q, o)
	}
	bar.done()
	took := time.Since(start)
	out := replayReport{From: *from, DryRun: *dry, Total: sum.Total(), Outcomes: map[string]int{}, Seconds: took.Seconds()}
	if took > 0 {
		out.PerSec = float64(sum.Total()) / took.Seconds()
	}
	for _, k := range replay.Outcomes() {
		out.Outcomes[string(k)] = sum[k]
	}
	if perr := printReplay(c.env.stdout, format, out); perr != nil {
		return perr
	}
	switch {
	case err != nil:
		return fmt.Errorf("replay: %w", err)
	case sum[replay.Errored] > 0:
		return &exitError{code: exitAPI, msg: fmt.Sprintf("replay: %d jobs hit an error and were left as they were; run again", sum[replay.Errored])}
	}
	return nil
}

func printReplay(w io.Writer, format string, r replayReport) error {
	if format == "json" {
		return printJSON(w, r)
	}
	what := "replay"
	if r.DryRun {
		what = "replay (dry run: nothing changed)"
	}
	fmt.Fprintf(w, "%s from %s: %d jobs in %.1fs (%.0f/s)\n", what, r.From, r.Total, r.Seconds, r.PerSec)
	t := newTable(w)
	for _, k := range replay.Outcomes() {
		t.row("  "+string(k), fmt.Sprint(r.Outcomes[string(k)]))
	}
	return t.flush()
}

// replayBar is the replay's progress line on a terminal: jobs done so far
// and the three outcomes operators watch.
type replayBar struct {
	mu     sync.Mutex
	w      io.Writer
	on     bool
	counts map[replay.Outcome]int
	n      int
}

func (b *replayBar) add(_ string, o replay.Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	b.counts[o]++
	if b.on {
		fmt.Fprintf(b.w, "\r\x1b[K%d jobs: %d replayed, %d re-sent, %d skipped as succeeded, %d as running, %d refused for budget, %d errors",
			b.n, b.counts[replay.Replayed], b.counts[replay.Resent], b.counts[replay.SkippedSucceeded],
			b.counts[replay.SkippedRunning], b.counts[replay.RefusedBudget], b.counts[replay.Errored])
	}
}

func (b *replayBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.on && b.n > 0 {
		fmt.Fprintln(b.w)
	}
}
