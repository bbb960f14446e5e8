// Command aijobs is the operator CLI: over the aijobs HTTP API it submits a
// job, reads it, waits for it with a progress bar, cancels it and lists
// jobs; over the jobs table and queues it reports failures and replays
// them through the claim path; and it decides whether a call should be a
// job at all (advise). See docs/cli.md.
//
// Exit codes: 0 success (for wait: the job succeeded), 1 the job failed,
// 2 usage or configuration error, 3 the job was abandoned, 4 API error,
// 5 network error, 6 wait timed out, 130 interrupted.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], systemEnv())
	stop()
	os.Exit(report(os.Stderr, err))
}
