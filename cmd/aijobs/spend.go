package main

import (
	"context"
	"io"

	"github.com/aijobs/aijobs/pkg/client"
)

const spendAbout = `Show your tenant's spend against its limits (GET /spend, docs/spend.md):
for each period you have a limit in (a UTC day, a UTC month), the limit,
what finished attempts spent, what attempts in flight hold, what is left for
new attempts, and when the period ends. No limit: no periods.`

// runSpend shows the caller's own spend.
func runSpend(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("spend", "", spendAbout)
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	format, cl, err := c.connect(ctx)
	if err != nil {
		return err
	}
	s, err := cl.Spend(ctx)
	if err != nil {
		return err
	}
	return printSpend(c.env.stdout, format, s)
}

// printSpend writes the spend as the API's JSON, or one line a period.
func printSpend(w io.Writer, format string, s client.Spend) error {
	if format == "json" {
		return printJSON(w, s)
	}
	if len(s.Periods) == 0 {
		_, err := io.WriteString(w, "no spend limit: nothing to show\n")
		return err
	}
	t := newTable(w)
	t.row("PERIOD", "LIMIT_CENTS", "SPENT_CENTS", "HELD_CENTS", "REMAINING_CENTS", "ENDS")
	for _, p := range s.Periods {
		t.row(p.Period, p.LimitCents.String(), p.SpentCents.String(), p.HeldCents.String(), p.RemainingCents.String(), stamp(p.Ends.Time))
	}
	return t.flush()
}
