// Command aijobs-chaos runs aijobs under injected faults (AWS, the model,
// worker processes, the API) with a seeded schedule, next to a naive SQS
// consumer facing the same schedule, and checks the invariants of
// docs/chaos.md. `make chaos SEED=... JOBS=... DURATION=...` runs it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/aijobs/aijobs/internal/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := chaos.Main(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(code)
}
