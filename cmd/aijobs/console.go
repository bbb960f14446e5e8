package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/aijobs/aijobs/pkg/app/payloads"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/console"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/replay"
	"github.com/aijobs/aijobs/pkg/s3"
)

const consoleAbout = `Serve the operator console: web pages for a bad hour (overview, failures,
jobs, a job, quarantines; cancel, replay with a dry run first, lift a
quarantine), read from the jobs and quarantine tables and the queues with
your AWS credentials, as failures, replay and quarantine do. Nothing is
exposed in AWS. It listens on 127.0.0.1:9090 unless told
otherwise, and refuses a non-loopback address unless --allow-remote (with
TLS, here or at a proxy). Open the URL it prints: it carries the access
token every request needs. Every action is logged to stderr with your AWS
identity. See docs/cli.md.`

// consoleFlags are the console's own flags.
type consoleFlags struct {
	listen            string
	remote, proxy     bool
	open              bool
	certFile, keyFile string
	refresh, window   time.Duration
}

// register adds the console's flags to fs.
func (f *consoleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", console.DefaultAddr, "`address` to serve on")
	fs.BoolVar(&f.remote, "allow-remote", false, "allow a --listen address that is not loopback (anyone with the URL acts with your AWS credentials); needs --tls-cert or --behind-proxy")
	fs.StringVar(&f.certFile, "tls-cert", "", "serve HTTPS with this certificate `file` (PEM), with --tls-key")
	fs.StringVar(&f.keyFile, "tls-key", "", "the private key `file` (PEM) of --tls-cert")
	fs.BoolVar(&f.proxy, "behind-proxy", false, "a reverse proxy in front serves the console over HTTPS (docs/cli.md, console); the cookie is marked Secure")
	fs.BoolVar(&f.open, "open", false, "open the console in your browser (with a one-time code, never the token, on the opener's command line)")
	fs.DurationVar(&f.refresh, "refresh", 5*time.Second, "how often live pages poll; the overview's reads are cached as long")
	fs.DurationVar(&f.window, "window", 48*time.Hour, "how far back the overview and the tenant-less jobs page read")
}

// tls loads the certificate, nil when the console serves plain HTTP. A
// console reached from elsewhere must not send its token in clear, so
// --allow-remote needs TLS here or at a proxy.
func (f *consoleFlags) tls() (*tls.Config, error) {
	switch {
	case f.refresh < time.Second || f.window < time.Hour:
		return nil, usageErrorf("console: --refresh must be at least 1s and --window at least 1h")
	case (f.certFile == "") != (f.keyFile == ""):
		return nil, usageErrorf("console: --tls-cert and --tls-key go together")
	case f.remote && f.certFile == "" && !f.proxy:
		return nil, usageErrorf("console: --allow-remote sends the access token over the network: give --tls-cert and --tls-key, or --behind-proxy for a reverse proxy that serves HTTPS")
	case f.certFile == "":
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return nil, usageErrorf("console: --tls-cert and --tls-key: %v", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// runConsole serves the console until interrupted.
func runConsole(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("console", "", consoleAbout)
	var af awsFlags
	af.register(fs, true)
	af.registerQuarantine(fs)
	var f consoleFlags
	f.register(fs)
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	tlsCfg, err := f.tls()
	if err != nil {
		return err
	}
	ln, err := console.Listen(f.listen, f.remote)
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
	cfg := console.Config{Store: op.store, Who: who, Retention: op.cfg.Settings.Retention, Refresh: f.refresh, Window: f.window,
		AllowRemote: f.remote, Secure: tlsCfg != nil || f.proxy, Calls: counter.Snapshot, Log: slog.New(slog.NewTextHandler(c.env.stderr, nil))}
	if op.cfg.QueueURL != "" {
		cfg.Queue = op.queue
		cfg.Replayer = replay.New(replay.Config{Store: op.store, Queue: op.queue, Retention: op.cfg.Settings.Retention, Limits: op.cfg.Settings.Limits})
	}
	if op.cfg.DLQURL != "" {
		cfg.DeadLetters = op.queue.DeadLetters()
	}
	if op.cfg.PayloadBucket != "" {
		cfg.ResultLinks = payloads.LinksOf(s3.NewPayloads(s3.NewClient(op.aws), op.cfg.PayloadBucket))
	}
	// The limits are the deployment's configuration (AIJOBS_TENANT_SPEND),
	// read here from the same environment the functions run with.
	if op.cfg.Spend.Any() {
		cfg.Spend, cfg.SpendLimits = dynamodb.NewSpend(awsclient.DynamoDB(op.aws), op.cfg.BucketsTable), op.cfg.Spend.For
		cfg.SpendTenants = slices.Collect(maps.Keys(op.cfg.Spend.Tenants))
	}
	// Quarantine off (AIJOBS_QUARANTINE_FOR=0) may mean no table to read:
	// the page says it is off instead of failing.
	if op.cfg.Settings.QuarantineFor > 0 {
		cfg.Quarantines = op.quarantines
	}
	con, err := console.New(cfg)
	if err != nil {
		return err
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	c.announce(con, scheme+"://"+ln.Addr().String(), f.open, fmt.Sprintf("as %s, table %s", who, op.cfg.Table))
	return serveConsole(ctx, &http.Server{Handler: con, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg}, ln)
}

// announce prints the console's URL at base, the one place its access
// token is shown, and opens the console in a browser when asked (as
// Jupyter does). The opener gets a one-time code, not the token: its
// command line is readable by every local user while it runs.
func (c *cli) announce(con *console.Console, base string, open bool, about string) {
	fmt.Fprintf(c.env.stdout, "aijobs console: %s (%s)\n", con.AccessURL(base), about)
	if !open {
		return
	}
	u, err := con.OpenURL(base)
	if err == nil {
		err = c.env.openURL(u)
	}
	if err != nil {
		fmt.Fprintf(c.env.stderr, "aijobs console: could not open a browser (%v): open the URL above\n", err)
	}
}

// serveConsole serves until ctx ends, over TLS when srv has a
// certificate.
func serveConsole(ctx context.Context, srv *http.Server, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	serve := srv.Serve
	if srv.TLSConfig != nil {
		serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
