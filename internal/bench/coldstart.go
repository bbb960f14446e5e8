package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
)

// Functions are the Lambda functions the stack deploys, each a main under
// functions/.
var Functions = []string{"api", "worker", "reconciler", "notifier", "collector"}

// coldRoutes is the fake's route with a batch lane: the collector
// function starts only on a route that offers one (the stack deploys it
// only then), and the others start on the same routes, as the stack's do.
const coldRoutes = `{"providers": {"default": {"kind": "fake"}}, "routes": {"default": {"rungs": [{"provider": "default",
  "price": {"input": "15", "output": "60"}, "lanes": {"batch": {"price": {"input": "7.5", "output": "30"}, "p99": "1h"}}}]}}}`

// ColdStartOptions are the cold-start measurement's knobs.
type ColdStartOptions struct {
	Endpoint string
	// Runs is how many times each function is started.
	Runs int
	// Dir is where the binaries are built (a temporary directory when
	// empty).
	Dir string
	// RIE, when set, is AWS's Lambda Runtime Interface Emulator
	// (`make bin/aws-lambda-rie`): each function is also started Runs
	// times under it, and its own Init duration recorded, as a check on
	// the stand-in's from a runtime API no one here wrote.
	RIE string
}

// ColdStart is one function's size and init times.
type ColdStart struct {
	Function string
	// Shipped is the size of the linux/arm64 binary as `make lambdas`
	// builds it; Host is the size of the same build for this machine,
	// which is the one started.
	Shipped, Host int64
	// Init is, per run, the time from the process's start to its first
	// request to the Lambda runtime API: the Go runtime, the package
	// initialisers, the configuration and the role's wiring (AWS config,
	// clients, for the notifier its secret's read from kumo).
	Init []time.Duration
	// InitRIE is, per run, the Init duration aws-lambda-rie reports for
	// the same span (empty without ColdStartOptions.RIE).
	InitRIE []time.Duration
}

// lambdaBuild are the flags infra.mk's LAMBDA_BUILD uses.
var lambdaBuild = []string{"build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// MeasureColdStarts builds every function as the stack ships it and starts
// each Runs times against a local stand-in of the Lambda runtime API, with
// an environment like the stack's (the resources' URLs, callbacks on)
// pointing at kumo, whose table, queues and signing secret it creates
// first.
func MeasureColdStarts(ctx context.Context, o ColdStartOptions) ([]ColdStart, error) {
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "aijobs-coldstart-")
		if err != nil {
			return nil, fmt.Errorf("coldstart: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	env, err := functionEnv(ctx, o.Endpoint)
	if err != nil {
		return nil, err
	}
	rt, err := startRuntimeAPI()
	if err != nil {
		return nil, err
	}
	defer rt.close()
	rieEnv := env
	env = append(env, "AWS_LAMBDA_RUNTIME_API="+rt.addr)
	var out []ColdStart
	for _, f := range Functions {
		c := ColdStart{Function: f}
		shipped, host := filepath.Join(dir, f+"-arm64"), filepath.Join(dir, f)
		if c.Shipped, err = build(ctx, f, shipped, "arm64"); err != nil {
			return out, err
		}
		if c.Host, err = build(ctx, f, host, runtime.GOARCH); err != nil {
			return out, err
		}
		if c.Init, err = timeRuns(o.Runs, func() (time.Duration, error) { return rt.timeInit(ctx, host, env) }); err != nil {
			return out, fmt.Errorf("coldstart: %s: %w", f, err)
		}
		if o.RIE != "" {
			if c.InitRIE, err = timeRuns(o.Runs, func() (time.Duration, error) { return timeInitRIE(ctx, o.RIE, host, rieEnv) }); err != nil {
				return out, fmt.Errorf("coldstart: %s under aws-lambda-rie: %w", f, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// timeRuns times runs+1 starts and drops the first, which warms the page
// cache.
func timeRuns(runs int, start func() (time.Duration, error)) ([]time.Duration, error) {
	var ds []time.Duration
	for range runs + 1 {
		d, err := start()
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds[1:], nil
}

func build(ctx context.Context, function, out, arch string) (int64, error) {
	cmd := exec.CommandContext(ctx, "go", append(lambdaBuild, "-o", out, "./functions/"+function)...)
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("coldstart: build %s for %s: %w: %s", function, arch, err, b)
	}
	st, err := os.Stat(out)
	if err != nil {
		return 0, fmt.Errorf("coldstart: %w", err)
	}
	return st.Size(), nil
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// functionEnv creates the resources on a fresh prefix and returns the
// environment the stack gives its functions (infra/functions.go): the
// resources' names and URLs, JSON logs, EMF metrics, callbacks on.
func functionEnv(ctx context.Context, endpoint string) ([]string, error) {
	vars := map[string]string{
		"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AIJOBS_PREFIX": fmt.Sprintf("cold-%d", time.Now().UnixNano()),
		"AIJOBS_LOG_LEVEL": "error", "AIJOBS_CALLBACKS": "true", "AIJOBS_ROUTES": coldRoutes,
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		return nil, err
	}
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true, Logger: app.Logger("error")})
	if err != nil {
		return nil, fmt.Errorf("coldstart: create resources: %w", err)
	}
	vars["AIJOBS_TABLE"], vars["AIJOBS_QUEUE_URL"], vars["AIJOBS_DLQ_URL"] = a.Config.Table, a.Config.QueueURL, a.Config.DLQURL
	vars["AIJOBS_CALLBACK_QUEUE_URL"], vars["AIJOBS_CALLBACK_DLQ_URL"] = a.Config.CallbackQueueURL, a.Config.CallbackDLQURL
	vars["AIJOBS_BUCKETS_TABLE"] = a.Config.BucketsTable
	vars["AWS_LAMBDA_FUNCTION_NAME"], vars["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = "aijobs-coldstart", "256"
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// runtimeAPI is a stand-in for the Lambda runtime API that answers
// nothing: it only notes when a function first asks for an invocation
// (GET /2018-06-01/runtime/invocation/next), which is where Lambda's
// Init phase ends.
type runtimeAPI struct {
	addr string
	srv  *http.Server
	next chan time.Time
}

func startRuntimeAPI() (*runtimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("coldstart: runtime API: %w", err)
	}
	rt := &runtimeAPI{addr: ln.Addr().String(), next: make(chan time.Time, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		select {
		case rt.next <- time.Now():
		default:
		}
		<-r.Context().Done() // hold the request until the process is gone
	})
	rt.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = rt.srv.Serve(ln) }()
	return rt, nil
}

func (rt *runtimeAPI) close() { _ = rt.srv.Close() }

// timeInit starts bin and returns how long it took to ask for its first
// invocation; then it kills it.
func (rt *runtimeAPI) timeInit(ctx context.Context, bin string, env []string) (time.Duration, error) {
	cmd := exec.Command(bin)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	select {
	case t := <-rt.next:
		return t.Sub(start), nil
	case err := <-exited:
		exited <- err
		return 0, fmt.Errorf("exited before asking for an invocation (%v): %s", err, stderr.String())
	case <-time.After(30 * time.Second):
		return 0, errors.New("no request to the runtime API within 30s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// ColdStartReport renders the figures as Markdown.
func ColdStartReport(cs []ColdStart) string {
	var b strings.Builder
	b.WriteString("| function | linux/arm64 binary | host binary | init p50 | init min | init max | runs | init p50 (aws-lambda-rie) | min | max |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	r := func(ds []time.Duration, p float64) string {
		if len(ds) == 0 {
			return "-"
		}
		return Percentile(ds, p).Round(100 * time.Microsecond).String()
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %.1f MB | %.1f MB | %s | %s | %s | %d | %s | %s | %s |\n", c.Function, mb(c.Shipped), mb(c.Host),
			r(c.Init, 50), r(c.Init, 0), r(c.Init, 100), len(c.Init), r(c.InitRIE, 50), r(c.InitRIE, 0), r(c.InitRIE, 100))
	}
	return b.String()
}

func mb(n int64) float64 { return float64(n) / 1e6 }
