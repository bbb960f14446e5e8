// Command aijobs-dev runs aijobs on a developer machine: the real handlers
// against kumo, LocalStack or AWS (AWS_ENDPOINT_URL), with API Gateway and
// the event sources (SQS, the table's stream) emulated in process.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "aijobs-dev:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Print(app.Banner(a, ln.Addr().String()))
	return a.DevServer().Serve(ctx, ln)
}
