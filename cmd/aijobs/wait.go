package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
)

const waitAbout = `Poll a job until it ends, then show it. Polls back off (the server's
Retry-After, If-None-Match so an unchanged job costs a 304, at most 30 s
apart). On a terminal a one-line progress bar (state, attempts, progress,
cost) is redrawn in place; piped, nothing is printed until the end.
The exit code is the job's outcome: 0 succeeded, 1 failed, 3 abandoned,
6 when --timeout passes first.`

// runWait waits for one job.
func runWait(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("wait", "ID", waitAbout)
	timeout := fs.Duration("timeout", 0, "give up after this long (exit 6); 0 waits for as long as the job takes")
	pos, err := c.parse(fs, args, 1)
	if err != nil {
		return err
	}
	if *timeout < 0 {
		return usageErrorf("wait: --timeout must not be negative")
	}
	format, cl, err := c.connect(ctx)
	if err != nil {
		return err
	}
	return c.await(ctx, cl, pos[0], *timeout, format)
}

// await waits for a job, drawing progress on a terminal, prints its final
// view, and turns its outcome into the exit code.
func (c *cli) await(ctx context.Context, cl *client.Client, id string, timeout time.Duration, format string) error {
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	out := c.env.stdout
	var onChange func(client.View)
	drawn := false
	if c.env.stdoutTTY {
		onChange = func(v client.View) {
			fmt.Fprint(out, "\r\x1b[K"+progressLine(v)) // back to the line's start, clear it, redraw
			drawn = true
		}
	}
	final, err := cl.Wait(wctx, id, onChange)
	if drawn {
		fmt.Fprintln(out)
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
			state := "not seen"
			if final.ID != "" {
				state = "still " + string(final.State)
				if perr := printView(out, format, final); perr != nil {
					return perr
				}
			}
			return &exitError{code: exitTimeout, msg: fmt.Sprintf("wait timed out after %s: job %s is %s", timeout, id, state)}
		}
		return err
	}
	if err := printView(out, format, final); err != nil {
		return err
	}
	return outcome(final)
}

// outcome is nil for a succeeded job and the job's exit code otherwise.
func outcome(v client.View) error {
	switch v.State {
	case job.Succeeded:
		return nil
	case job.Failed:
		return &exitError{code: exitJobFailed, msg: fmt.Sprintf("job %s failed: %s after %d attempt(s), cost %s cents", v.ID, orDash(string(v.Class())), v.Attempts, v.CostCents)}
	default:
		return &exitError{code: exitAbandoned, msg: fmt.Sprintf("job %s abandoned: %s, cost %s cents", v.ID, orDash(string(v.Class())), v.CostCents)}
	}
}
