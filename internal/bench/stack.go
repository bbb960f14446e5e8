package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
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
// model, serving HTTP on a local port: each function wired on its own, as
// its own Lambda is, so what each writes to its log stream is counted
// apart.
type stack struct {
	url      string
	srv      *devserver.Server
	counter  *awsclient.Counter
	fake     *fake.Provider
	cfg      config.Config
	client   *http.Client
	outputs  map[string]*output // by function: api, worker, reconciler, notifier
	receiver *receiver          // the callback target; nil with callbacks off
	cancel   context.CancelFunc
	done     chan error
	stopped  sync.Once
	wrote    map[string]Written
}

// roles are the stack's Lambda functions and the role each is wired
// with; the notifier only with callbacks on.
var roles = []struct {
	name string
	role app.Role
}{{"api", app.APIRole}, {"worker", app.WorkerRole}, {"reconciler", app.ReconcilerRole}, {"notifier", app.NotifierRole}}

// startStack creates o's resources and serves them; wrap, when set,
// stands between the worker and the fake model. The functions run at the
// shipped log level and metrics setting (config's defaults: info, EMF),
// so their log streams are what a deployed stack's would be. The counter
// and the outputs are reset once the setup is done, so they count the
// jobs alone.
func startStack(ctx context.Context, o Options, wrap func(model.Provider) model.Provider) (s *stack, err error) {
	env := map[string]string{
		"AWS_ENDPOINT_URL": o.Endpoint, "AIJOBS_PREFIX": fmt.Sprintf("bench-%d", time.Now().UnixNano()),
		"AIJOBS_LISTEN": "127.0.0.1:0", "AIJOBS_MODEL_PROVIDER": "fake",
		"AIJOBS_BATCH_WINDOW": o.BatchWindow.String(), "AIJOBS_BATCH_SIZE": fmt.Sprint(o.BatchSize),
		"AIJOBS_MAX_CONCURRENCY": fmt.Sprint(o.MaxConcurrency), "AIJOBS_CALLBACKS": fmt.Sprint(o.Callbacks),
		// The receiver is plain HTTP on loopback, which only the dev
		// server admits (docs/webhooks.md).
		"AIJOBS_CALLBACK_ALLOW_LOOPBACK": fmt.Sprint(o.Callbacks),
		// Room for a 120 s call within the shipped worker timeout.
		"AIJOBS_MODEL_TIMEOUT": max(o.Latency+30*time.Second, settings.Defaults().RouteTimeout).String(),
	}
	for k, v := range o.Env {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	s = &stack{cfg: cfg, counter: awsclient.NewCounter(), fake: fake.New(fake.Config{Latency: o.Latency, Price: cfg.Shortcut.Price}),
		done: make(chan error, 1), outputs: map[string]*output{}}
	var every model.Provider = s.fake
	if wrap != nil {
		every = wrap(every)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			s.cancel()
		}
	}()
	apps, err := s.wire(ctx, cfg, every)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.srv = devServer(apps)
	if o.Callbacks {
		if s.receiver, err = startReceiver(); err != nil {
			return nil, err
		}
	}
	go func() { s.done <- s.srv.Serve(ctx, ln) }()
	s.counter.Reset() // count the jobs, not the setup
	for _, out := range s.outputs {
		out.reset()
	}
	s.url = "http://" + ln.Addr().String()
	s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency}}
	return s, nil
}

// wire builds each function's app with its logger and EMF writer on its
// own output.
func (s *stack) wire(ctx context.Context, cfg config.Config, every model.Provider) (map[app.Role]*app.App, error) {
	apps := map[app.Role]*app.App{}
	for _, f := range roles {
		if f.role == app.NotifierRole && !cfg.Callbacks {
			continue
		}
		out := &output{}
		s.outputs[f.name] = out
		var err error
		apps[f.role], err = app.New(ctx, cfg, app.Options{Role: f.role, CreateResources: true, Counter: s.counter, EveryProvider: every,
			Logger: app.LoggerTo(&out.stderr, cfg.LogLevel), MetricsOutput: &out.stdout})
		if err != nil {
			return nil, err
		}
	}
	return apps, nil
}

// devServer is one dev server over the functions' apps. The emulator's
// own lines (a failed invocation, a slow delete) are no function's: they
// go to the bench's stderr, errors only.
func devServer(apps map[app.Role]*app.App) *devserver.Server {
	all := *apps[app.WorkerRole]
	all.API, all.Reconciler = apps[app.APIRole].API, apps[app.ReconcilerRole].Reconciler
	if n := apps[app.NotifierRole]; n != nil {
		all.Notifier, all.CallbackQueue, all.Stream = n.Notifier, n.CallbackQueue, n.Stream
	}
	all.Logger = app.Logger("error")
	return all.DevServer()
}

// stop ends the dev server (in-flight invocations are cancelled), waits
// for it and notes what the functions wrote; it may be called again.
func (s *stack) stop() {
	s.stopped.Do(func() {
		s.cancel()
		<-s.done
		s.client.CloseIdleConnections()
		if s.receiver != nil {
			s.receiver.stop()
		}
		s.wrote = s.logBytes()
	})
}

// written stops the stack and returns what each function wrote to its
// log stream since the setup.
func (s *stack) written() map[string]Written {
	s.stop()
	return s.wrote
}

// logBytes is what each function wrote since the setup.
func (s *stack) logBytes() map[string]Written {
	w := map[string]Written{}
	for name, out := range s.outputs {
		w[name] = out.written()
	}
	return w
}
