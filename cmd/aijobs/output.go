package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
)

// printJSON writes v as one line of JSON: easy to pipe into jq, one
// document per command.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the output: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// printView writes one job in the chosen format.
func printView(w io.Writer, format string, v client.View) error {
	if format == "json" {
		return printJSON(w, v)
	}
	t := newTable(w)
	row := func(k, v string) { t.row(k, v) }
	row("id", v.ID)
	row("state", string(v.State))
	row("error_class", orDash(string(v.Class())))
	row("attempts", fmt.Sprintf("%d/%d", v.Attempts, v.MaxAttempts))
	row("progress", percent(v.Progress))
	row("cost", fmt.Sprintf("%s of %s cents", v.CostCents, v.BudgetCents))
	row("model", v.Model)
	row("request_key", v.RequestKey)
	row("input_hash", v.InputHash)
	row("created_at", stamp(v.CreatedAt.Time))
	row("updated_at", stamp(v.UpdatedAt.Time))
	row("deadline", stamp(v.Deadline.Time))
	row("version", fmt.Sprint(v.Version))
	if len(v.Metadata) > 0 {
		row("metadata", string(v.Metadata))
	}
	if v.ResultModel != "" {
		row("result_model", v.ResultModel)
	}
	if len(v.Result) > 0 {
		row("result", string(v.Result))
	}
	return t.flush()
}

// printPage writes a list of jobs: the API's page shape as JSON, or one
// line per job as a table. A list holds job summaries (no progress,
// result or updated_at: get the job for those).
func printPage(w io.Writer, format string, p client.Page) error {
	if format == "json" {
		return printJSON(w, p)
	}
	t := newTable(w)
	t.row("ID", "STATE", "ERROR_CLASS", "ATTEMPTS", "COST_CENTS", "CREATED_AT", "MODEL")
	for _, v := range p.Jobs {
		t.row(v.ID, string(v.State), orDash(string(v.Class())),
			fmt.Sprintf("%d/%d", v.Attempts, v.MaxAttempts), v.CostCents.String(), stamp(v.CreatedAt.Time), v.Model)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if p.NextCursor != "" {
		_, err := fmt.Fprintf(w, "more: --cursor %s (or --all)\n", cell(p.NextCursor))
		return err
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func percent(p float64) string { return fmt.Sprintf("%.0f%%", p*100) }

func stamp(t time.Time) string { return t.UTC().Format(client.TimeFormat) }

// progressLine is the one-line progress bar of a job on a terminal:
// "[########------------]  40%  running  attempt 1/4  cost 0.42 of 50 cents".
func progressLine(v client.View) string {
	const width = 20
	filled := min(max(int(v.Progress*width+0.5), 0), width)
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	s := fmt.Sprintf("[%s] %4s  %s  attempt %d/%d  cost %s of %s cents",
		bar, percent(v.Progress), v.State, v.Attempts, v.MaxAttempts, v.CostCents, v.BudgetCents)
	if c := v.Class(); c != "" {
		s += "  " + string(c)
	}
	return s
}
