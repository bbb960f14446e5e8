package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"
	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/devserver"
	"github.com/aijobs/aijobs/pkg/job"
)

// Options are a run's knobs; DefaultOptions are `make chaos`'s.
type Options struct {
	Seed    Seed
	Jobs    int
	Tenants int
	// Load is how long jobs keep arriving and faults keep being injected;
	// the run then drains (see Bound) and checks.
	Load time.Duration
	// Endpoint is the AWS endpoint (kumo).
	Endpoint string
	// WorkerBin is a binary whose `worker` argument runs Worker.
	WorkerBin string
	// LogDir receives the processes' logs; empty: a new temporary one.
	LogDir    string
	AWS       AWSRates
	Model     ModelRates
	KillEvery time.Duration
	// Progress, when set, receives a line now and then.
	Progress io.Writer
}

// DefaultOptions are the rates every run uses unless told otherwise.
func DefaultOptions() Options {
	return Options{
		Jobs: 500, Tenants: 4, Load: 2 * time.Minute, KillEvery: 15 * time.Second,
		AWS: AWSRates{Throttle: 0.02, ServerError: 0.01, Stall: 0.006, Hang: 0.006, LostAnswer: 0.01},
		Model: ModelRates{StallHeaders: 0.06, Cut: 0.06, Trickle: 0.05, RateLimited: 0.06, Overloaded: 0.05, Late: 0.04, FlexRefused: 0.15,
			CacheHit: 0.3, Reasoning: 0.3, PriorityAtStandard: 0.3},
	}
}

// Profiles are the named fault rates `-profile` picks; each starts from
// DefaultOptions.
var Profiles = map[string]func(*Options){
	"default": func(*Options) {},
	// harsh is issue W's new-user run: about 15% of DynamoDB and SQS calls
	// refused with throttling and 5xx answers, 30% stalled past a
	// heartbeat, 10% landing with their answer lost, on the API's and the
	// workers' calls alike, the claim and the finishing writes included.
	"harsh": func(o *Options) {
		o.AWS = AWSRates{Throttle: 0.08, ServerError: 0.07, Stall: 0.30, Hang: 0.01, LostAnswer: 0.10}
	},
}

type modelHost struct {
	srv *ModelServer
	url string
}

type harness struct {
	opts     Options
	endpoint string
	prefix   string
	logDir   string
	cfg      config.Config
	setup    *app.App
	model    modelHost
	tally    *Tally
	sched    *Schedule
	start    time.Time
	loadEnd  time.Time
	clients  *clients
	killer   *apiKiller
	baseline *Baseline
	workers  []*workerProc
	log      *slog.Logger
	sweeps   []string
	sweepsMu sync.Mutex
	// longestSweep is the longest a reconciler's sweep took in the run:
	// the machine's own time for the work Bound counts as instant.
	longestSweep time.Duration
	files        []*os.File
}

func (h *harness) logPath(name string) string { return filepath.Join(h.logDir, name) }

func (h *harness) progress(format string, args ...any) {
	if h.opts.Progress != nil {
		fmt.Fprintf(h.opts.Progress, "[%6.1fs] %s\n", time.Since(h.start).Seconds(), fmt.Sprintf(format, args...))
	}
}

// Run runs one seeded chaos run against the endpoint and checks the
// invariants; an error means the harness itself could not run.
func Run(ctx context.Context, o Options) (*Report, error) {
	h, err := newHarness(o)
	if err != nil {
		return nil, err
	}
	defer h.closeFiles()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	closeModel, err := h.startModelServer()
	if err != nil {
		return nil, err
	}
	defer closeModel()
	if err := h.setUp(ctx); err != nil {
		return nil, err
	}
	closeAPI, err := h.startAPI(ctx)
	if err != nil {
		return nil, err
	}
	defer closeAPI()
	h.startReconciler(ctx, &wg)
	if err := h.startWorkers(); err != nil {
		return nil, err
	}
	defer h.stopWorkers()
	if err := h.startBaseline(ctx); err != nil {
		return nil, err
	}
	defer h.baseline.Crash()
	return h.loadDrainCheck(ctx, &wg)
}

// newHarness gives the run its log directory (a new temporary one unless
// told), the harness's own log in it, and a resource prefix no other run
// shares. The caller closes the log files once the run ends.
func newHarness(o Options) (*harness, error) {
	h := &harness{opts: o, endpoint: o.Endpoint, tally: NewTally(), start: time.Now()}
	if h.logDir = o.LogDir; h.logDir == "" {
		d, err := os.MkdirTemp("", fmt.Sprintf("aijobs-chaos-%d-", o.Seed))
		if err != nil {
			return nil, err
		}
		h.logDir = d
	}
	if err := os.MkdirAll(h.logDir, 0o755); err != nil {
		return nil, err
	}
	h.log = slog.New(slog.DiscardHandler)
	h.log = h.fileLogger("harness.log")
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	h.prefix = fmt.Sprintf("chaos-%d-%s", o.Seed, hex.EncodeToString(b))
	return h, nil
}

func (h *harness) closeFiles() {
	for _, f := range h.files {
		_ = f.Close()
	}
}

// serve serves handler on a free local port until the returned closer is
// called.
func serve(handler http.Handler) (url string, closer func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv.Close, nil
}

// startModelServer starts the model server first: the configuration
// names its URL as every rung's provider.
func (h *harness) startModelServer() (func() error, error) {
	srv := &ModelServer{Recorder: h.tally}
	url, closer, err := serve(srv)
	if err != nil {
		return nil, err
	}
	h.model = modelHost{srv: srv, url: url}
	return closer, nil
}

// setUp creates the run's resources, keeps the harness's fault-free view
// of them, and draws the schedule every side of the run follows: the
// jobs, the model server's plan for each request, the load's end.
func (h *harness) setUp(ctx context.Context) error {
	o := h.opts
	var err error
	if h.cfg, err = config.Load(lookup(env(h.endpoint, h.prefix, h.model.url, "api"))); err != nil {
		return err
	}
	if h.setup, err = app.New(ctx, h.cfg, app.Options{Role: app.ReconcilerRole, CreateResources: true, Logger: h.log}); err != nil {
		return err
	}
	h.cfg.QueueURL, h.cfg.DLQURL = h.setup.Config.QueueURL, h.setup.Config.DLQURL
	h.sched = NewSchedule(ScheduleOptions{Seed: o.Seed, Jobs: o.Jobs, Tenants: o.Tenants, Load: o.Load, Model: o.Model, KillEvery: o.KillEvery,
		Reserve: func(route, content string, maxTokens int) job.Nanocents {
			return h.cfg.Routes[route].Reserve(job.Input{Messages: []job.Message{{Role: "user", Content: content}}, MaxTokens: maxTokens}, nil)
		}})
	h.clients = newClients("", h.sched.Jobs)
	h.model.srv.Plan = h.sched.Gen
	h.model.srv.JobName = func(ns string, i int) string {
		if ns == "aj" && i >= 0 && i < len(h.clients.runs) {
			return h.clients.runs[i].id
		}
		return fmt.Sprintf("%s-%d", ns, i)
	}
	h.loadEnd = h.start.Add(o.Load)
	return nil
}

// startAPI serves the API behind the gateway the clients call, its AWS
// calls faulted and the API killer in their path, as a deployment's would
// meet them.
func (h *harness) startAPI(ctx context.Context) (func() error, error) {
	o, s := h.opts, h.cfg.Settings
	h.killer = &apiKiller{rec: h.tally}
	apiFaults := &AWSFaults{Seed: o.Seed, Where: "api", Rates: o.AWS, Until: h.loadEnd, Recorder: h.tally}
	apiFaults.StallMin, apiFaults.StallMax, apiFaults.HangMax = faultTimes(s)
	api, err := app.New(ctx, h.cfg, app.Options{Role: app.APIRole, Logger: h.fileLogger("api.log"),
		APIOptions: []func(*smithymw.Stack) error{apiFaults.Middleware, h.killer.Middleware}})
	if err != nil {
		return nil, err
	}
	url, closer, err := serve(&devserver.Gateway{Handler: api.API.Handle, Timeout: s.APITimeout, Logger: api.Logger})
	if err != nil {
		return nil, err
	}
	h.clients.url = url
	return closer, nil
}

// startReconciler runs the reconciler on its schedule, fault-free: its
// own bound is what invariant 1 measures.
func (h *harness) startReconciler(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.reconcile(ctx, h.cfg.Settings.ReconcileEvery)
	}()
}

// startWorkers starts two worker processes with their clocks skewed
// apart, so the lease guard is tested across clocks that disagree.
func (h *harness) startWorkers() error {
	h.workers = []*workerProc{{name: "worker-a", skew: -skew}, {name: "worker-b", skew: skew}}
	for _, w := range h.workers {
		if err := w.start(h); err != nil {
			h.stopWorkers() // the one already started (stop skips one never started)
			return err
		}
	}
	return nil
}

func (h *harness) stopWorkers() {
	for _, w := range h.workers {
		w.stop(h.log)
	}
}

// startBaseline starts the naive consumer the run compares aijobs with,
// facing the same schedule.
func (h *harness) startBaseline(ctx context.Context) error {
	var err error
	if h.baseline, err = h.newBaseline(ctx); err != nil {
		return err
	}
	h.baseline.Start()
	return nil
}

// loadDrainCheck drives the load and its worker kills, drains, and stops
// the clients, the baseline and the workers before counting the dead
// letters and checking, so the check reads a run that has stopped.
func (h *harness) loadDrainCheck(ctx context.Context, wg *sync.WaitGroup) (*Report, error) {
	h.progress("seed %d: %d jobs over %s; kumo %s; logs in %s", h.opts.Seed, h.opts.Jobs, h.opts.Load, h.endpoint, h.logDir)
	drainCtx, stopClients := context.WithCancel(ctx)
	defer stopClients()
	var cw sync.WaitGroup
	h.drive(drainCtx, &cw)
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.kill(ctx)
	}()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		h.watchLost(drainCtx)
	}()
	_ = sleep(ctx, time.Until(h.loadEnd))
	h.progress("load over: %d faults injected; draining", h.tally.Total())
	records, changed, emptied, err := h.drain(ctx)
	if err != nil {
		return nil, err
	}
	stopClients()
	cw.Wait()
	<-watchDone
	h.baseline.Crash()
	h.stopWorkers()
	dlq, err := h.deadLetters(context.Background())
	if err != nil {
		return nil, err
	}
	rep := h.check(records, changed, emptied, dlq)
	if rep.Payloads, err = h.payloads(context.Background(), records); err != nil {
		return nil, err
	}
	if err := rep.WriteAll(h.logPath("failures.txt")); err != nil {
		h.log.Warn("writing the full report failed", "err", err)
	}
	return rep, nil
}

// fileLogger logs warnings and errors to a file of the log directory,
// closed when the run ends.
func (h *harness) fileLogger(name string) *slog.Logger {
	f, err := os.OpenFile(h.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return h.log
	}
	h.files = append(h.files, f)
	return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// reconcile runs the reconciler's sweep every period, as its schedule does.
func (h *harness) reconcile(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		began := time.Now()
		rep, err := h.setup.Reconciler.Run(ctx)
		h.sweepsMu.Lock()
		h.longestSweep = max(h.longestSweep, time.Since(began))
		h.sweepsMu.Unlock()
		line := fmt.Sprintf("sweep: candidates %d, re-sent queued %d, re-sent running %d, healthy %d, errors %d, backlog %d",
			rep.Candidates, rep.Queued, rep.Running, rep.Healthy, rep.Errors, rep.Backlog)
		if err != nil {
			line += ": " + err.Error()
		}
		h.sweepsMu.Lock()
		h.sweeps = append(h.sweeps, fmt.Sprintf("%.0fs %s", time.Since(h.start).Seconds(), line))
		h.sweepsMu.Unlock()
		h.progress("%s", line)
	}
}

func (h *harness) newBaseline(ctx context.Context) (*Baseline, error) {
	plain := awsclient.SQS(h.setup.AWS)
	dlq, err := plain.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(h.prefix + "-baseline-dlq")})
	if err != nil {
		return nil, fmt.Errorf("baseline dlq: %w", err)
	}
	attrs, err := plain.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, fmt.Errorf("baseline dlq: %w", err)
	}
	redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": attrs.Attributes["QueueArn"],
		"maxReceiveCount": fmt.Sprint(h.cfg.Settings.MaxReceiveCount)})
	q, err := plain.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(h.prefix + "-baseline"),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(int(baselineVisibility.Seconds())), "RedrivePolicy": string(redrive)}})
	if err != nil {
		return nil, fmt.Errorf("baseline queue: %w", err)
	}
	f := &AWSFaults{Seed: h.opts.Seed, Where: "baseline", Rates: h.opts.AWS, Until: h.loadEnd, Recorder: h.tally}
	f.StallMin, f.StallMax, f.HangMax = faultTimes(h.cfg.Settings)
	cfg, err := awsclient.Load(ctx, awsclient.Config{Region: h.cfg.Region, Endpoint: h.endpoint, APIOptions: []func(*smithymw.Stack) error{f.Middleware}})
	if err != nil {
		return nil, err
	}
	cfg.Logger = logging.Nop{} // a crash cuts its long polls; the SDK would warn about each
	stream, pl, err := newBaselineProviders(h.model.url, h.tally)
	if err != nil {
		return nil, err
	}
	s := h.cfg.Settings
	return &Baseline{SQS: awsclient.SQS(cfg), QueueURL: *q.QueueUrl, Plans: h.sched.Jobs, Stream: stream, Plain: pl,
		Timeout: h.cfg.Routes["default"].Rungs[0].Timeout, Consumers: 2 * s.MaxConcurrency * s.BatchSize}, nil
}

// drive starts every job's client at its time, its duplicates, its
// baseline twin, and the tenants' list checks.
func (h *harness) drive(ctx context.Context, wg *sync.WaitGroup) {
	plain := awsclient.SQS(h.setup.AWS)
	for _, r := range h.clients.runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := r.plan
			if sleep(ctx, time.Until(h.start.Add(p.At))) != nil {
				return
			}
			if !p.APIKilled {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := h.baseline.Send(ctx, p.Index); err != nil {
						h.log.Warn("baseline send failed", "index", p.Index, "err", err)
					}
				}()
			}
			created := time.Now()
			if !h.clients.create(ctx, r, h.killer.mark) {
				return
			}
			for _, d := range p.Duplicates {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if sleep(ctx, time.Until(created.Add(d))) != nil {
						return
					}
					body := job.QueueMessage{JobID: r.id}.Body()
					if _, err := plain.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(h.cfg.QueueURL), MessageBody: aws.String(body)}); err == nil {
						h.tally.Fault(Event{Kind: "duplicate_message", Where: "queue", Op: "SQS.SendMessage", Job: r.id})
					}
					if !p.APIKilled {
						_ = h.baseline.Send(ctx, p.Index)
					}
				}()
			}
			for i := range p.Probes {
				other := h.clients.runs[(p.Index+1+i)%len(h.clients.runs)]
				if other.plan.Tenant != p.Tenant {
					h.clients.probe(ctx, p.Tenant, other.id)
				}
			}
			if !p.APIKilled {
				h.clients.poll(ctx, r, created)
			}
		}()
	}
	for _, t := range h.sched.Tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sleep(ctx, 3*time.Second) == nil {
				h.clients.list(ctx, t)
			}
		}()
	}
}

// kill SIGKILLs a worker process mid-call at each of the schedule's
// times, crashes the baseline with it, and restarts both.
func (h *harness) kill(ctx context.Context) {
	for _, k := range h.sched.Kills {
		if sleep(ctx, time.Until(h.start.Add(k.At))) != nil {
			return
		}
		w := h.workers[k.Worker]
		where, open, held := h.killable(ctx, w)
		w.kill()
		h.baseline.Crash()
		h.tally.Fault(Event{Kind: "worker_sigkill", Where: where, Op: fmt.Sprintf("%d calls open, %d answers read and unrecorded", open, held)})
		h.progress("SIGKILL %s with %d model calls open, %d answers read and not yet recorded", where, open, held)
		if sleep(ctx, k.Restart) != nil {
			return
		}
		h.baseline.Start()
		if err := w.start(h); err != nil {
			h.log.Error("restart failed", "worker", w.name, "err", err)
		}
	}
}

// killable waits (at most killWait) for a moment to kill w mid-call: a
// model call open, and no answer it read whole in the last lease TTL whose
// job is still unfinished. A process killed between reading an answer and
// recording it loses the answer whatever the design, so such a kill would
// fail invariant 2 without a fault of the engine's; an answer held
// unrecorded for longer than a lease is the engine's to lose, and does
// not hold the kill back. The process is stopped (SIGSTOP) while the
// harness looks, so it reads nothing more in between; it is left stopped
// for the SIGKILL that follows.
func (h *harness) killable(ctx context.Context, w *workerProc) (where string, open, held int) {
	lease := h.cfg.Settings.LeaseTTL
	for end := time.Now().Add(killWait); ; {
		where = w.where()
		open = h.model.srv.InFlight(where)
		if open > 0 {
			w.signal(syscall.SIGSTOP)
			_ = sleep(ctx, 100*time.Millisecond) // its last receipts reach the harness
			held = h.unrecorded(ctx, where, time.Now().Add(-lease-100*time.Millisecond))
			if held == 0 || time.Now().After(end) {
				return where, open, held
			}
			w.signal(syscall.SIGCONT)
		}
		if time.Now().After(end) || sleep(ctx, 100*time.Millisecond) != nil {
			return where, open, held
		}
	}
}

// unrecorded counts the answers where read whole since t whose job is not
// finished.
func (h *harness) unrecorded(ctx context.Context, where string, since time.Time) int {
	n := 0
	for _, gen := range h.tally.ReadSince(where, since) {
		var ns string
		var idx, seq int
		if _, err := fmt.Sscanf(strings.ReplaceAll(gen, "/", " "), "%s %d %d", &ns, &idx, &seq); err != nil || ns != "aj" || idx >= len(h.clients.runs) {
			continue
		}
		if j, err := h.read(ctx, h.clients.runs[idx].id); err != nil || !j.State.Terminal() {
			n++
		}
	}
	return n
}

// readPatience bounds how long the harness keeps reading one record that
// the store answers unavailable: the harness observes the run and is no
// part of the system under test, so an emulator slow under the run's load
// must not end it. A count of tries was not enough: moto, with a second
// make test beside it on 2 cores, failed five GetItems in a row, each
// past the AWS call timeout, in one CI-like run.
const readPatience = 2 * time.Minute

// read is the harness's read of a job's record, retried while the store
// answers unavailable, for up to readPatience.
func (h *harness) read(ctx context.Context, id string) (job.Job, error) {
	giveUp := time.Now().Add(readPatience)
	for try := 1; ; try++ {
		j, err := h.setup.Store.Get(ctx, id)
		if err == nil || job.ErrorCode(err) != job.CodeUnavailable || time.Now().After(giveUp) {
			return j, err
		}
		if err := sleep(ctx, min(time.Duration(try), 5)*time.Second); err != nil {
			return j, err
		}
	}
}

// killWait bounds the wait for a moment to kill a worker mid-call.
const killWait = 10 * time.Second

// watchLost records when each job whose message was never sent is first
// touched (nudged by the reconciler, or claimed).
func (h *harness) watchLost(ctx context.Context) {
	for sleep(ctx, time.Second) == nil {
		for _, r := range h.clients.runs {
			r.mu.Lock()
			lost, touched := !r.lostAt.IsZero(), !r.touchedAt.IsZero()
			r.mu.Unlock()
			if !lost || touched {
				continue
			}
			j, err := h.setup.Store.Get(ctx, r.id)
			if err == nil && (j.Version > 1 || j.State != job.Queued) {
				r.mu.Lock()
				r.touchedAt = time.Now()
				r.mu.Unlock()
			}
		}
	}
}

// Bound is how long an unfinished job may stay untouched once its message
// may be gone: the reconciler's documented recovery of a lost message (it
// re-sends a job untouched for AIJOBS_RECONCILE_AFTER at its next sweep,
// AIJOBS_RECONCILE_EVERY later at most), plus one visibility timeout for
// the re-sent message to be received and one worker timeout to run it.
func Bound(c config.Config) time.Duration {
	s := c.Settings
	return s.ReconcileAfter + s.ReconcileEvery + s.VisibilityTimeout + s.WorkerTimeout
}

// drainCap bounds the wait for a backlog left by the load to drain.
const drainCap = 30 * time.Minute

// drain waits for the backlog the load left to be worked off, then for
// every job to finish, or for the unfinished ones to have been untouched
// for longer than Bound since the queue emptied (a job waiting its turn
// in the queue is not stuck; once the queue is empty, only the reconciler
// can move a job whose message is gone). It returns the records, when each
// last changed, and when the queue emptied.
func (h *harness) drain(ctx context.Context) (map[string]job.Job, map[string]time.Time, time.Time, error) {
	bound := Bound(h.cfg)
	records := map[string]job.Job{}
	changed := map[string]time.Time{}
	var emptied time.Time
	capAt := time.Now().Add(drainCap)
	for {
		pending, stuck := 0, 0
		for _, r := range h.clients.runs {
			if j, ok := records[r.id]; ok && settled(j) {
				continue
			}
			j, err := h.read(ctx, r.id)
			if job.ErrorCode(err) == job.CodeNotFound {
				continue
			}
			if err != nil {
				return nil, nil, emptied, fmt.Errorf("read %s: %w", r.id, err)
			}
			if old, ok := records[r.id]; !ok {
				changed[r.id] = j.UpdatedAt
			} else if old.Version != j.Version {
				changed[r.id] = time.Now()
			}
			records[r.id] = j
			if !settled(j) {
				pending++
				if !emptied.IsZero() && time.Since(later(changed[r.id], emptied)) > bound {
					stuck++
				}
			}
		}
		if emptied.IsZero() {
			if n, err := h.inQueue(ctx, h.cfg.QueueURL); err == nil && n == 0 {
				emptied = time.Now()
				h.progress("the job queue is empty")
			}
		}
		if pending == 0 || (!emptied.IsZero() && stuck == pending) || time.Now().After(capAt) || ctx.Err() != nil {
			h.progress("drained: %d unfinished (%d untouched for over %s since the queue emptied)", pending, stuck, bound)
			return records, changed, emptied, ctx.Err()
		}
		h.progress("draining: %d unfinished", pending)
		if errors.Is(sleep(ctx, 2*time.Second), context.Canceled) {
			return records, changed, emptied, ctx.Err()
		}
	}
}

// settled reports whether j will not change again by itself: finished,
// and no attempt of it left to settle or be written off (a job cancelled
// while an attempt ran keeps that attempt's lease and hold until then).
func settled(j job.Job) bool {
	return j.State.Terminal() && j.LeaseOwner == "" && j.Held == 0
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// inQueue is how many messages the queue at url holds: visible, in flight
// or delayed.
func (h *harness) inQueue(ctx context.Context, url string) (int, error) {
	out, err := awsclient.SQS(h.setup.AWS).GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range out.Attributes {
		var k int
		_, _ = fmt.Sscan(v, &k)
		n += k
	}
	return n, nil
}

// deadLetters counts the messages in the dead letter queue (SQS's redrive
// and the workers' own hand-offs at the receive limit), by job id. The
// reconciler's sweep hides the dead letters it reads for 30 s
// (reconciler.Config.DeadLetterHide), and the check comes soon after a
// sweep: the count goes on receiving until it has seen as many as the
// queue holds, or for deadLetterWait. Two empty receives were once taken
// for the end, and a run reported none while the DLQ held one.
func (h *harness) deadLetters(ctx context.Context) (map[string]int, error) {
	q := h.setup.Queue.DeadLetters()
	total, err := h.inQueue(ctx, h.cfg.DLQURL)
	if err != nil {
		return nil, err
	}
	out, seen := map[string]int{}, 0
	for end := time.Now().Add(deadLetterWait); seen < total && time.Now().Before(end); {
		// Each is hidden longer than the wait: none is counted twice.
		msgs, err := q.ReceiveHidden(ctx, 10, time.Second, 2*deadLetterWait)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			b, _ := job.ParseQueueMessage(m.Body)
			out[b.JobID]++
		}
		seen += len(msgs)
	}
	if seen < total {
		h.log.Warn("the dead letter queue holds messages the count never saw", "held", total, "seen", seen)
	}
	return out, nil
}

// deadLetterWait bounds the wait for dead letters a reconciler's sweep
// hid (30 s) to show again.
const deadLetterWait = 45 * time.Second
