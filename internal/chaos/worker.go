package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/devserver"
)

// The variables a worker process reads besides the engine's own.
const (
	envSeed  = "CHAOS_SEED"
	envWhere = "CHAOS_WHERE"
	envSkew  = "CHAOS_SKEW"
	envUntil = "CHAOS_FAULTS_UNTIL"
	envRates = "CHAOS_AWS_RATES"
)

// skewedClock is a worker's clock, off by a fixed offset.
type skewedClock struct{ off time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().UTC().Add(c.off) }

// Worker is a worker process of a run: the real worker handler (pkg/app,
// role worker) under the SQS event source mapping emulator
// (pkg/devserver.Poller), with AWS faults injected into its SDK clients
// and its clock skewed. It reports each fault on out as it injects it.
func Worker(ctx context.Context, getenv func(string) string, out io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	seed, err := strconv.ParseUint(getenv(envSeed), 10, 64)
	if err != nil {
		return fmt.Errorf("chaos worker: %s: %w", envSeed, err)
	}
	off, err := time.ParseDuration(getenv(envSkew))
	if err != nil {
		return fmt.Errorf("chaos worker: %s: %w", envSkew, err)
	}
	until, err := strconv.ParseInt(getenv(envUntil), 10, 64)
	if err != nil {
		return fmt.Errorf("chaos worker: %s: %w", envUntil, err)
	}
	var rates AWSRates
	if err := json.Unmarshal([]byte(getenv(envRates)), &rates); err != nil {
		return fmt.Errorf("chaos worker: %s: %w", envRates, err)
	}
	s := cfg.Settings
	f := &AWSFaults{Seed: Seed(seed), Where: getenv(envWhere), Rates: rates, Until: time.UnixMilli(until), Recorder: &LineRecorder{w: out}}
	f.StallMin, f.StallMax, f.HangMax = faultTimes(s)
	lines := &LineRecorder{w: out}
	f.Recorder = lines
	a, err := app.New(ctx, cfg, app.Options{Role: app.WorkerRole, Clock: skewedClock{off}, APIOptions: []func(*smithymw.Stack) error{f.Middleware},
		ModelTransport: func(t http.RoundTripper) http.RoundTripper { return observe(t, lines, f.Where) }})
	if err != nil {
		return err
	}
	p := &devserver.Poller{Source: a.Queue, Handler: a.Worker.Handle, BatchSize: s.BatchSize, BatchWindow: s.BatchWindow,
		Concurrency: s.MaxConcurrency, FunctionTimeout: s.WorkerTimeout, QueueARN: "arn:aws:sqs:" + a.AWS.Region + ":000000000000:" + s.QueueName(),
		Region: a.AWS.Region, Logger: a.Logger}
	p.Run(ctx)
	return nil
}

// workerProc is one worker process the harness starts, kills and
// restarts; each start is a new incarnation (worker-a.1, worker-a.2, ...),
// with its own base URL at the model server.
type workerProc struct {
	name string
	skew time.Duration

	mu          sync.Mutex
	incarnation int
	cmd         *exec.Cmd
	done        chan struct{}
}

func (w *workerProc) where() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%s.%d", w.name, w.incarnation)
}

// start runs a new incarnation of the worker.
func (w *workerProc) start(h *harness) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.incarnation++
	where := fmt.Sprintf("%s.%d", w.name, w.incarnation)
	e := env(h.endpoint, h.prefix, h.model.url, where)
	e["AIJOBS_QUEUE_URL"], e["AIJOBS_DLQ_URL"] = h.cfg.QueueURL, h.cfg.DLQURL
	e["AIJOBS_LOG_LEVEL"] = "info" // every attempt's outcome, for diagnosis
	rates, _ := json.Marshal(h.opts.AWS)
	e[envSeed], e[envWhere], e[envSkew] = strconv.FormatUint(uint64(h.opts.Seed), 10), where, w.skew.String()
	e[envUntil], e[envRates] = strconv.FormatInt(h.loadEnd.UnixMilli(), 10), string(rates)
	cmd := exec.Command(h.opts.WorkerBin, "worker")
	cmd.Env = append(os.Environ(), envList(e)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.OpenFile(h.logPath(w.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "--- %s started %s\n", where, time.Now().Format(time.RFC3339Nano))
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", where, err)
	}
	done := make(chan struct{})
	go func() {
		readEvents(out, h.tally)
		err := cmd.Wait()
		fmt.Fprintf(logf, "--- %s ended %s: %v\n", where, time.Now().Format(time.RFC3339Nano), err)
		_ = logf.Close()
		close(done)
	}()
	w.cmd, w.done = cmd, done
	return nil
}

// signal sends sig to the current incarnation.
func (w *workerProc) signal(sig syscall.Signal) {
	w.mu.Lock()
	cmd := w.cmd
	w.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (w *workerProc) kill() {
	w.mu.Lock()
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// stop ends the worker with SIGTERM (it records its attempts in flight as
// timeouts, as a shut-down Lambda would) and waits, then kills it.
func (w *workerProc) stop(log *slog.Logger) {
	w.mu.Lock()
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		log.Warn("worker did not stop on SIGTERM; killing it", "worker", w.name)
		w.kill()
	}
}
