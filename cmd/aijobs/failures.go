package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

const failuresAbout = `Failed and abandoned jobs that ended in a time range, read from the jobs
table's failure index (one query per class and shard, no scan): what they
cost, what cheaper lanes saved on them, and which inputs caused them.
Totals per error class and per input hash (the same input failing again
and again is one line), dearest first; --jobs also lists every job. Reads
DynamoDB directly with your AWS credentials (the stack's operator policy),
not the HTTP API: the failure index, then each job's record for what it
saved (the index does not keep it), one read a job.`

// failuresReport is the JSON output of failures.
type failuresReport struct {
	Since    time.Time     `json:"since"`
	Until    time.Time     `json:"until"`
	Jobs     int           `json:"jobs"`
	Cost     job.Nanocents `json:"cost_cents"`
	Saved    job.Nanocents `json:"saved_cents"`
	ByClass  []total       `json:"by_class"`
	ByInput  []total       `json:"by_input_hash"`
	Failures []failureRow  `json:"failures,omitempty"`
}

type total struct {
	Key     string           `json:"key"`
	Jobs    int              `json:"jobs"`
	Cost    job.Nanocents    `json:"cost_cents"`
	Saved   job.Nanocents    `json:"saved_cents"`
	Classes []job.ErrorClass `json:"classes,omitempty"`
}

type failureRow struct {
	ID        string         `json:"id"`
	Tenant    string         `json:"tenant"`
	Model     string         `json:"model"`
	State     job.State      `json:"state"`
	Class     job.ErrorClass `json:"error_class"`
	InputHash string         `json:"input_hash"`
	Attempts  int            `json:"attempts"`
	Cost      job.Nanocents  `json:"cost_cents"`
	Saved     job.Nanocents  `json:"saved_cents"`
	EndedAt   time.Time      `json:"ended_at"`
}

// runFailures reports failures.
func runFailures(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("failures", "", failuresAbout)
	var af awsFlags
	af.register(fs, false)
	classes := fs.String("class", "", "only these error `classes`, comma-separated (default: every class)")
	since := fs.String("since", "24h", "from this `time`: RFC 3339 or a duration back from now")
	until := fs.String("until", "", "until this `time` (exclusive): RFC 3339 or a duration back from now (default: now)")
	jobs := fs.Bool("jobs", false, "list every job, not only the totals")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	q, err := c.failureQuery(*classes, *since, *until)
	if err != nil {
		return err
	}
	q.Saved = true
	format, op, err := c.connectOperator(ctx, af)
	if err != nil {
		return err
	}
	var all []job.Failure
	if err := op.store.Failures(ctx, q, func(f job.Failure) error { all = append(all, f); return nil }); err != nil {
		return fmt.Errorf("failures: %w", err)
	}
	r := job.SummarizeFailures(all)
	out := failuresReport{Since: q.Since, Until: q.Until, Jobs: r.Jobs, Cost: r.Cost, Saved: r.Saved,
		ByClass: totals(r.ByClass), ByInput: totals(r.ByInput)}
	if *jobs {
		slices.SortFunc(all, func(a, b job.Failure) int { return a.EndedAt.Compare(b.EndedAt) })
		for _, f := range all {
			out.Failures = append(out.Failures, failureRow{ID: f.ID, Tenant: f.Tenant, Model: f.Model, State: f.State, Class: f.Class,
				InputHash: f.InputHash, Attempts: f.Attempts, Cost: f.Cost, Saved: f.Saved, EndedAt: f.EndedAt})
		}
	}
	if format == "json" {
		return printJSON(c.env.stdout, out)
	}
	return printFailures(c.env.stdout, out)
}

// failureQuery reads the class, since and until flags.
func (c *cli) failureQuery(classes, since, until string) (job.FailureQuery, error) {
	var q job.FailureQuery
	for _, s := range strings.Split(classes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !job.ErrorClass(s).Valid() {
			return q, usageErrorf("--class %q is not an error class (see docs/errors.md)", s)
		}
		q.Classes = append(q.Classes, job.ErrorClass(s))
	}
	var err error
	if q.Since, err = c.parseSince("--since", since); err != nil {
		return q, err
	}
	q.Until = c.clock()
	if until != "" {
		if q.Until, err = c.parseSince("--until", until); err != nil {
			return q, err
		}
	}
	if !q.Since.Before(q.Until) {
		return q, usageErrorf("--since %s is not before --until %s", q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	}
	return q, nil
}

func totals(ts []job.Total) []total {
	out := make([]total, 0, len(ts))
	for _, t := range ts {
		out = append(out, total{Key: t.Key, Jobs: t.Jobs, Cost: t.Cost, Saved: t.Saved, Classes: t.Classes})
	}
	return out
}

func printFailures(w io.Writer, r failuresReport) error {
	fmt.Fprintf(w, "%d failed or abandoned jobs, %s cents (%s cents saved by cheaper lanes), ended %s .. %s\n\n", r.Jobs, r.Cost,
		r.Saved, r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339))
	tw := newTable(w)
	tw.row("ERROR_CLASS", "JOBS", "COST_CENTS", "SAVED_CENTS")
	for _, t := range r.ByClass {
		tw.row(t.Key, fmt.Sprint(t.Jobs), t.Cost.String(), t.Saved.String())
	}
	tw.row("", "", "")
	tw.row("INPUT_HASH", "JOBS", "COST_CENTS", "SAVED_CENTS", "CLASSES")
	for _, t := range r.ByInput {
		names := make([]string, len(t.Classes))
		for i, c := range t.Classes {
			names[i] = string(c)
		}
		tw.row(t.Key, fmt.Sprint(t.Jobs), t.Cost.String(), t.Saved.String(), strings.Join(names, ","))
	}
	if len(r.Failures) > 0 {
		tw.row("", "", "")
		tw.row("ID", "STATE", "ERROR_CLASS", "ATTEMPTS", "COST_CENTS", "SAVED_CENTS", "ENDED_AT", "INPUT_HASH", "MODEL", "TENANT")
		for _, f := range r.Failures {
			tw.row(f.ID, string(f.State), string(f.Class), fmt.Sprint(f.Attempts), f.Cost.String(), f.Saved.String(),
				stamp(f.EndedAt), f.InputHash, f.Model, f.Tenant)
		}
	}
	return tw.flush()
}
