package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
)

const listAbout = `List your jobs (GET /jobs), newest first as the API orders them. One page
by default; --all follows the cursors to the end and prints them as one list.
JSON output is the API's page: {"jobs":[...],"next_cursor":"..."|null}.`

// runList lists jobs.
func runList(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("list", "", listAbout)
	state := fs.String("state", "", "only jobs in this `state`: queued, running, succeeded, failed, abandoned")
	class := fs.String("error-class", "", "only jobs with this error `class` (docs/errors.md), e.g. rate_limited")
	since := fs.String("since", "", "only jobs from this `time` on: RFC 3339 (2026-12-01T00:00:00Z) or a duration back from now (24h)")
	limit := fs.Int("limit", 0, "page size (default: the server's)")
	cursor := fs.String("cursor", "", "continue from a page's next_cursor")
	all := fs.Bool("all", false, "follow next_cursor until the last page")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	q := client.ListQuery{State: job.State(*state), ErrorClass: job.ErrorClass(*class), Limit: *limit, Cursor: *cursor}
	switch {
	case *state != "" && !q.State.Valid():
		return usageErrorf("list: --state %q: want queued, running, succeeded, failed or abandoned", *state)
	case *class != "" && !q.ErrorClass.Valid():
		return usageErrorf("list: --error-class %q is not an error class (see docs/errors.md)", *class)
	case *limit < 0:
		return usageErrorf("list: --limit must not be negative")
	}
	if *since != "" {
		t, err := c.parseSince("list: --since", *since)
		if err != nil {
			return err
		}
		q.Since = t
	}
	format, cl, err := c.connect(ctx)
	if err != nil {
		return err
	}
	page, err := listPages(ctx, cl, q, *all)
	if err != nil {
		return err
	}
	return printPage(c.env.stdout, format, page)
}

// listPages reads one page, or with all every page, as one page. A cursor
// that comes back twice would loop for ever: it is an API error.
func listPages(ctx context.Context, cl *client.Client, q client.ListQuery, all bool) (client.Page, error) {
	var out client.Page
	seen := map[string]bool{}
	for {
		p, err := cl.List(ctx, q)
		if err != nil {
			return client.Page{}, err
		}
		out.Jobs = append(out.Jobs, p.Jobs...)
		out.NextCursor = p.NextCursor
		if !all || p.NextCursor == "" {
			return out, nil
		}
		if seen[p.NextCursor] {
			return client.Page{}, fmt.Errorf("list: the API returned the same cursor twice (%d jobs read)", len(out.Jobs))
		}
		seen[p.NextCursor] = true
		q.Cursor = p.NextCursor
	}
}

// parseSince reads flag's value s: an RFC 3339 time or a duration back
// from now.
func (c *cli) parseSince(flag, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, usageErrorf("%s %q: want an RFC 3339 time or a positive duration back from now, such as 24h", flag, s)
	}
	return c.clock().Add(-d), nil
}

// clock is the time now, from the env's seam in tests.
func (c *cli) clock() time.Time {
	if c.env.now != nil {
		return c.env.now()
	}
	return time.Now()
}
