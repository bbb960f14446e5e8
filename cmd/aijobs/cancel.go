package main

import "context"

// runCancel cancels one job and shows it.
func runCancel(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("cancel", "ID", `Cancel a job (POST /jobs/{id}/cancel). The job ends abandoned with class
cancelled; a running model call stops at its next heartbeat. Cancelling a
job that is already cancelled shows it again (exit 0); a job that
succeeded or failed is already_finished (exit 4).`)
	pos, err := c.parse(fs, args, 1)
	if err != nil {
		return err
	}
	format, err := c.format()
	if err != nil {
		return err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	v, err := cl.Cancel(ctx, pos[0])
	if err != nil {
		return err
	}
	return printView(c.env.stdout, format, v)
}
