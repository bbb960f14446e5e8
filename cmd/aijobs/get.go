package main

import "context"

// runGet shows one job.
func runGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("get", "ID", "Show a job (GET /jobs/{id}). Exits 0 whatever the job's state; use wait to block until it ends.")
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
	s, err := cl.Get(ctx, pos[0], "")
	if err != nil {
		return err
	}
	return printView(c.env.stdout, format, s.View)
}
