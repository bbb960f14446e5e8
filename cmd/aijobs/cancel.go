package main

import (
	"context"

	"github.com/aijobs/aijobs/pkg/client"
)

// runCancel cancels one job and shows it.
func runCancel(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("cancel", "ID", `Cancel a job (POST /jobs/{id}/cancel). The job ends abandoned with class
cancelled; a running model call stops at its next heartbeat. Cancelling a
job that is already cancelled shows it again (exit 0); a job that
succeeded or failed is already_finished (exit 4).`)
	return c.showOne(ctx, fs, args, func(cl *client.Client, id string) (client.View, error) {
		return cl.Cancel(ctx, id)
	})
}
