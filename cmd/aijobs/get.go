package main

import (
	"context"
	"flag"

	"github.com/aijobs/aijobs/pkg/client"
)

// runGet shows one job.
func runGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("get", "ID", "Show a job (GET /jobs/{id}). Exits 0 whatever the job's state; use wait to block until it ends.")
	return c.showOne(ctx, fs, args, func(cl *client.Client, id string) (client.View, error) {
		s, err := cl.Get(ctx, id, "")
		return s.View, err
	})
}

// showOne runs a command that takes one job id: act on the job, then show
// the view it answered.
func (c *cli) showOne(ctx context.Context, fs *flag.FlagSet, args []string, act func(*client.Client, string) (client.View, error)) error {
	pos, err := c.parse(fs, args, 1)
	if err != nil {
		return err
	}
	format, cl, err := c.connect(ctx)
	if err != nil {
		return err
	}
	v, err := act(cl, pos[0])
	if err != nil {
		return err
	}
	return printView(c.env.stdout, format, v)
}
