package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/console"
	"github.com/aijobs/aijobs/pkg/replay"
)

const consoleAbout = `Serve the operator console: web pages for a bad hour (overview, failures,
jobs, a job; cancel and replay with a dry run first), read from the jobs
table and queues with your AWS credentials, as failures and replay do.
Nothing is exposed in AWS. It listens on 127.0.0.1:9090 unless told
otherwise, and refuses a non-loopback address unless --allow-remote.
Every action is logged to stderr with your AWS identity. See docs/cli.md.`

// runConsole serves the console until interrupted.
func runConsole(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("console", "", consoleAbout)
	var af awsFlags
	af.register(fs, true)
	listen := fs.String("listen", console.DefaultAddr, "`address` to serve on")
	remote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback (anyone who reaches it acts with your AWS credentials)")
	refresh := fs.Duration("refresh", 5*time.Second, "how often live pages poll; the overview's reads are cached as long")
	window := fs.Duration("window", 48*time.Hour, "how far back the overview and the tenant-less jobs page read")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	if *refresh < time.Second || *window < time.Hour {
		return usageErrorf("console: --refresh must be at least 1s and --window at least 1h")
	}
	ln, err := console.Listen(*listen, *remote)
	if err != nil {
		return usageErrorf("console: %v", err)
	}
	defer ln.Close()
	counter := awsclient.NewCounter()
	op, err := c.operator(ctx, af, counter)
	if err != nil {
		return err
	}
	op.findQueues(ctx)
	who, err := callerARN(ctx, op.aws)
	if err != nil {
		return usageErrorf("console: who are you? STS GetCallerIdentity failed: %v", err)
	}
	cfg := console.Config{Store: op.store, Who: who, Retention: op.cfg.Settings.Retention, Refresh: *refresh, Window: *window,
		AllowRemote: *remote, Calls: counter.Snapshot, Log: slog.New(slog.NewTextHandler(c.env.stderr, nil))}
	if op.cfg.QueueURL != "" {
		cfg.Queue = op.queue
		cfg.Replayer = replay.New(replay.Config{Store: op.store, Queue: op.queue, Retention: op.cfg.Settings.Retention, Limits: op.cfg.Settings.Limits})
	}
	if op.cfg.DLQURL != "" {
		cfg.DeadLetters = op.queue.DeadLetters()
	}
	con, err := console.New(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.stdout, "aijobs console: http://%s (as %s, table %s)\n", ln.Addr(), who, op.cfg.Table)
	srv := &http.Server{Handler: con, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: serve: %w", err)
	}
	return nil
}

// callerARN is the AWS identity the credentials act as.
func callerARN(ctx context.Context, cfg aws.Config) (string, error) {
	out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Arn), nil
}
