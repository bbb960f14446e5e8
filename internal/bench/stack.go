package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/devserver"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
	"github.com/aijobs/aijobs/pkg/settings"
)

// stack is one run's dev server on a fresh prefix over kumo, with the fake
// model, serving HTTP on a local port.
type stack struct {
	url     string
	srv     *devserver.Server
	counter *awsclient.Counter
	fake    *fake.Provider
	cfg     config.Config
	client  *http.Client
	cancel  context.CancelFunc
	done    chan error
}

// startStack creates o's resources and serves them; wrap, when set,
// stands between the worker and the fake model. The counter is reset once
// the setup's calls are made, so it counts the jobs alone.
func startStack(ctx context.Context, o Options, wrap func(model.Provider) model.Provider) (*stack, error) {
	// Callbacks off: the benchmark measures the job's own path (the
	// notifier's stream reads and invocations are not counted).
	env := map[string]string{
		"AWS_ENDPOINT_URL": o.Endpoint, "AIJOBS_PREFIX": fmt.Sprintf("bench-%d", time.Now().UnixNano()),
		"AIJOBS_LISTEN": "127.0.0.1:0", "AIJOBS_LOG_LEVEL": "error", "AIJOBS_METRICS": "off", "AIJOBS_MODEL_PROVIDER": "fake",
		"AIJOBS_BATCH_WINDOW": o.BatchWindow.String(), "AIJOBS_BATCH_SIZE": fmt.Sprint(o.BatchSize),
		"AIJOBS_MAX_CONCURRENCY": fmt.Sprint(o.MaxConcurrency), "AIJOBS_CALLBACKS": "false",
		// Room for a 120 s call within the shipped worker timeout.
		"AIJOBS_MODEL_TIMEOUT": max(o.Latency+30*time.Second, settings.Defaults().RouteTimeout).String(),
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	s := &stack{cfg: cfg, counter: awsclient.NewCounter(), fake: fake.New(fake.Config{Latency: o.Latency, Price: cfg.Shortcut.Price}), done: make(chan error, 1)}
	var every model.Provider = s.fake
	if wrap != nil {
		every = wrap(every)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true, Counter: s.counter, EveryProvider: every})
	if err != nil {
		s.cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.srv = a.DevServer()
	go func() { s.done <- s.srv.Serve(ctx, ln) }()
	s.counter.Reset() // count the jobs, not the setup
	s.url = "http://" + ln.Addr().String()
	s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency}}
	return s, nil
}

// stop ends the dev server (in-flight invocations are cancelled) and waits
// for it.
func (s *stack) stop() {
	s.cancel()
	<-s.done
	s.client.CloseIdleConnections()
}
