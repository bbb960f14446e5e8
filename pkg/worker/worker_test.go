package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// provider is a scripted model: each call runs the next step for its job.
type provider struct {
	mu    sync.Mutex
	calls map[string]int
	gens  map[string]int
	step  func(ctx context.Context, r model.Request, call int) (model.Response, error)
}

func (p *provider) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	p.mu.Lock()
	p.calls[r.JobID]++
	n := p.calls[r.JobID]
	p.mu.Unlock()
	resp, err := p.step(ctx, r, n)
	if err == nil {
		p.mu.Lock()
		p.gens[r.JobID]++
		p.mu.Unlock()
	}
	return resp, err
}

func (p *provider) generations(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gens[id]
}

func newProvider(step func(ctx context.Context, r model.Request, call int) (model.Response, error)) *provider {
	return &provider{calls: map[string]int{}, gens: map[string]int{}, step: step}
}

func ok(cost job.Nanocents) func(context.Context, model.Request, int) (model.Response, error) {
	return func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Model: "m1", Usage: model.Usage{InputTokens: int64(cost)}}, nil
	}
}

type visibility struct {
	handle string
	d      time.Duration
}

type queue struct {
	mu         sync.Mutex
	visibility []visibility
	dead       []string
	sent       []visibility // job id and delay of each fresh message
	failSends  bool
	// batches are the entries of each ChangeVisibilities call; onBatch,
	// when set, answers it instead (a fault injected).
	batches [][]visibility
	onBatch func(ctx context.Context, changes map[string]time.Duration) map[string]error
	// onChange, when set, answers each single ChangeVisibility.
	onChange func(ctx context.Context) error
}

func (q *queue) ChangeVisibilities(ctx context.Context, changes map[string]time.Duration) map[string]error {
	var entries []visibility
	for h, d := range changes {
		entries = append(entries, visibility{h, d})
	}
	q.mu.Lock()
	q.batches = append(q.batches, entries)
	q.visibility = append(q.visibility, entries...)
	on := q.onBatch
	q.mu.Unlock()
	if on != nil {
		return on(ctx, changes)
	}
	return nil
}

// singles counts the one-message ChangeVisibility calls (all calls less
// the batched entries).
func (q *queue) singles() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.visibility)
	for _, b := range q.batches {
		n -= len(b)
	}
	return n
}

func (q *queue) batched() [][]visibility {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([][]visibility(nil), q.batches...)
}

func (q *queue) SendAfter(_ context.Context, id, _ string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failSends {
		return &job.Error{Code: job.CodeUnavailable}
	}
	q.sent = append(q.sent, visibility{id, d})
	return nil
}

func (q *queue) ChangeVisibility(ctx context.Context, h string, d time.Duration) error {
	q.mu.Lock()
	q.visibility = append(q.visibility, visibility{h, d})
	on := q.onChange
	q.mu.Unlock()
	if on != nil {
		return on(ctx)
	}
	return nil
}

func (q *queue) DeadLetter(_ context.Context, body, reason string) error {
	q.mu.Lock()
	q.dead = append(q.dead, reason+":"+body)
	q.mu.Unlock()
	return nil
}

func (q *queue) last() visibility {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.visibility) == 0 {
		return visibility{}
	}
	return q.visibility[len(q.visibility)-1]
}

type metrics struct {
	mu     sync.Mutex
	counts map[string]float64
}

func (m *metrics) Emit(name string, v float64, _ string, dims map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := dims["ErrorClass"]; ok {
		name += "/" + c
	}
	if l, ok := dims["Limit"]; ok {
		name += "/" + l
	}
	m.counts[name] += v
}

func (m *metrics) get(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}

type fixture struct {
	metrics *metrics
	t       *testing.T
	store   *memstore.Store
	queue   *queue
	prov    *provider
	w       *worker.Worker
	price   job.Price
}

var timing = worker.Timing{
	// A margin far above the heartbeat, so a loaded machine's scheduling
	// delays (the race detector, parallel packages) never reach it.
	Heartbeat: 20 * time.Millisecond, LeaseTTL: 300 * time.Millisecond, LeaseMargin: 150 * time.Millisecond, AttemptMargin: 150 * time.Millisecond,
	LambdaMargin: 50 * time.Millisecond, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
}

func setup(t *testing.T, step func(context.Context, model.Request, int) (model.Response, error)) *fixture {
	f := &fixture{t: t, store: memstore.New(), queue: &queue{}, prov: newProvider(step), metrics: &metrics{counts: map[string]float64{}}}
	// 1 and 2 nanocents per token: an input token is one nanocent, so a
	// provider's usage states the cost it means directly.
	f.price, _ = job.PricePerMillion("0.001", "0.002")
	f.w = f.newWorker(f.store)
	return f
}

// newWorker is the fixture's worker over store (a wrapper of f.store that
// misbehaves, say), with opts applied to its config.
func (f *fixture) newWorker(store worker.Store, opts ...func(*worker.Config)) *worker.Worker {
	cfg := worker.Config{
		Store: store, Queue: f.queue, Timing: timing, Clock: job.SystemClock{},
		Retention: job.Retention{Succeeded: time.Hour, Failed: 24 * time.Hour},
		Routes:    f.routes(),
		Providers: map[string]model.Provider{"p": f.prov},
		Rand:      func() float64 { return 0 },
		Metrics:   f.metrics,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return worker.New(cfg)
}

// routes is one default route with one rung on provider "p", model "m1".
func (f *fixture) routes() map[string]job.Route {
	return map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "p", Model: "m1", Price: f.price, Timeout: 2 * time.Second}}}}
}

func (f *fixture) create(key string, mut func(*job.Job)) job.Job {
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 10})
	now := time.Now()
	j := job.Job{ID: job.NewID("t1", key), Tenant: "t1", RequestKey: key, Model: "default", Input: in,
		State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: job.Millis(now.Add(time.Hour)),
		Version: 1, CreatedAt: job.Millis(now), UpdatedAt: job.Millis(now)}
	if mut != nil {
		mut(&j)
	}
	if _, err := f.store.Create(context.Background(), j); err != nil {
		f.t.Fatal(err)
	}
	return j
}

// event is an SQS batch of bodies, with message ids m0, m1... and receipt
// handles r0, r1...
func event(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), ReceiptHandle: fmt.Sprintf("r%d", i), Body: b})
	}
	return ev
}

func (f *fixture) deliver(bodies ...string) events.SQSEventResponse {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := f.w.Handle(ctx, event(bodies...))
	if err != nil {
		f.t.Fatalf("Handle returned an error: %v", err)
	}
	return resp
}

func (f *fixture) get(id string) job.Job {
	j, err := f.store.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

func body(id string) string { return `{"job_id":"` + id + `"}` }

func failedIDs(r events.SQSEventResponse) []string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestSuccessRecordsResultAndCost(t *testing.T) {
	f := setup(t, ok(job.Nanocents(7000)))
	j := f.create("k1", nil)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("failures = %v, want none", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 7000 || got.Attempts != 1 || got.ResultModel != "p/m1" || got.ErrorClass != "" {
		t.Fatalf("job = %+v", got)
	}
	var res model.Response
	if err := json.Unmarshal(got.Result, &res); err != nil || res.Output != "hi" {
		t.Fatalf("result %s: %v", got.Result, err)
	}
}

func TestDuplicateDeliveriesNeverGenerateTwice(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		time.Sleep(100 * time.Millisecond)
		return ok(1)(ctx, r, n)
	})
	j := f.create("k1", nil)
	// Three copies of the message in one batch, as SQS at-least-once may do.
	r := f.deliver(body(j.ID), body(j.ID), body(j.ID))
	if got := f.prov.generations(j.ID); got != 1 {
		t.Fatalf("generations = %d, want 1", got)
	}
	// The copies that found a live lease stay hidden behind it; none is deleted.
	if len(r.BatchItemFailures) != 2 {
		t.Fatalf("kept = %v, want the two duplicates", failedIDs(r))
	}
	// Redelivered after the job finished: deleted, no generation.
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("finished job's duplicate kept: %v", failedIDs(r))
	}
	if got := f.prov.generations(j.ID); got != 1 {
		t.Fatalf("generations after redelivery = %d, want 1", got)
	}
	if f.get(j.ID).Attempts != 1 {
		t.Fatalf("attempts = %d, want 1", f.get(j.ID).Attempts)
	}
	if got := f.metrics.get("DuplicatesAbsorbed"); got != 3 {
		t.Fatalf("DuplicatesAbsorbed = %v, want 3", got)
	}
	if got := f.metrics.get("JobsSucceeded"); got != 1 {
		t.Fatalf("JobsSucceeded = %v, want 1", got)
	}
}

func TestRetryableErrorReleasesWithBackoffAndKeepsCost(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		if n == 1 {
			return model.Response{}, &model.Error{Class: job.RateLimited, Detail: "http 429", Usage: model.Usage{InputTokens: 500}}
		}
		return ok(1000)(ctx, r, n)
	})
	j := f.create("k1", nil)
	r := f.deliver(body(j.ID))
	if len(r.BatchItemFailures) != 1 {
		t.Fatalf("a retry must keep its message: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Queued || got.ErrorClass != job.RateLimited || got.Cost != 500 || got.LeaseOwner != "" {
		t.Fatalf("after retryable error: %+v", got)
	}
	if v := f.queue.last(); v.handle != "r0" || v.d != 50*time.Millisecond {
		t.Fatalf("backoff visibility = %+v, want r0 for 50ms (base 100ms, half fixed)", v)
	}
	// A duplicate during the backoff waits it out: no claim, no call.
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 1 || f.prov.calls[j.ID] != 1 {
		t.Fatalf("a duplicate skipped the backoff: kept %v, calls %d", failedIDs(r), f.prov.calls[j.ID])
	}
	if v := f.queue.last(); v.d <= 0 || v.d > 50*time.Millisecond+time.Second {
		t.Fatalf("the duplicate must hide until the backoff ends: %+v", v)
	}
	time.Sleep(60 * time.Millisecond)
	f.deliver(body(j.ID))
	got = f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 1500 || got.Attempts != 2 || got.ErrorClass != "" {
		t.Fatalf("after success: %+v", got)
	}
}

func TestPermanentErrorFails(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.ContentFiltered, Usage: model.Usage{InputTokens: 42}}
	})
	j := f.create("k1", nil)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("a permanent error must delete its message: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Failed || got.ErrorClass != job.ContentFiltered || got.Cost != 42 || got.Attempts != 1 {
		t.Fatalf("job = %+v", got)
	}
	if f.metrics.get("JobsFailed/content_filtered") != 1 || f.metrics.get("CostCents") != 42e-9 {
		t.Fatalf("metrics = %v", f.metrics.counts)
	}
}

func TestAttemptsUsedUpFailWithLastClass(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.Overloaded, Usage: model.Usage{InputTokens: 1}}
	})
	j := f.create("k1", func(j *job.Job) { j.MaxAttempts = 2 })
	f.deliver(body(j.ID))
	time.Sleep(60 * time.Millisecond) // the first backoff
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("the last attempt must delete its message: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Failed || got.ErrorClass != job.Overloaded || got.Attempts != 2 || got.Cost != 2 {
		t.Fatalf("job = %+v", got)
	}
}

func TestBudgetBoundsAttempts(t *testing.T) {
	// Worst case of one attempt: prompt (5 bytes -> 3 + 8 tokens) x 1 +
	// 10 output tokens x 2 = 31 nanocents.
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.ProviderError, Usage: model.Usage{InputTokens: 20}}
	})
	j := f.create("k1", func(j *job.Job) { j.Budget = 50; j.MaxAttempts = 5 })
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.BudgetExhausted || got.Cost != 20 {
		t.Fatalf("remaining 30 < worst case 31 must abandon: %+v", got)
	}

	g := setup(t, ok(1))
	k := g.create("k2", func(j *job.Job) { j.Budget = 30 })
	g.deliver(body(k.ID))
	if got := g.get(k.ID); got.State != job.Abandoned || got.ErrorClass != job.BudgetExhausted || g.prov.generations(k.ID) != 0 {
		t.Fatalf("an attempt that could overrun the budget must never start: %+v", got)
	}
}

func TestCancelReachesRunningCall(t *testing.T) {
	var sawCancel atomic.Bool
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		<-ctx.Done()
		sawCancel.Store(true)
		return model.Response{}, &model.Error{Class: job.Cancelled, Usage: model.Usage{InputTokens: 300}, Err: ctx.Err()}
	})
	j := f.create("k1", nil)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = f.store.Cancel(context.Background(), job.Cancel{ID: j.ID, Tenant: "t1", Now: time.Now()})
	}()
	start := time.Now()
	r := f.deliver(body(j.ID))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("cancel took %s to reach the call (heartbeat 20ms)", took)
	}
	if !sawCancel.Load() || len(r.BatchItemFailures) != 0 {
		t.Fatalf("call context not cancelled or message kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.Cancelled || got.Cost != 300 {
		t.Fatalf("cancelled job must keep the discarded attempt's cost: %+v", got)
	}
	if f.metrics.get("LeasesLost") != 1 {
		t.Fatalf("LeasesLost = %v, want 1", f.metrics.get("LeasesLost"))
	}
}

func TestLeaseLostToAnotherWorkerDiscardsResultKeepsCost(t *testing.T) {
	f := setup(t, nil)
	j := f.create("k1", nil)
	f.prov.step = func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		if n == 1 {
			// Another worker takes over while the first call runs (its lease
			// was forced to expire): it writes the attempt off, claims, and
			// succeeds first.
			cur, _ := f.store.Get(ctx, r.JobID)
			claimAt := cur.LeaseUntil.Add(time.Millisecond)
			if _, err := f.store.WriteOff(ctx, job.NewWriteOff(cur, claimAt)); err != nil {
				t.Errorf("write-off: %v", err)
			}
			if _, err := f.store.Claim(ctx, job.Claim{ID: r.JobID, Owner: "other", Now: claimAt, LeaseUntil: claimAt.Add(time.Hour)}); err != nil {
				t.Errorf("takeover: %v", err)
			}
			_, _ = f.store.Succeed(ctx, job.Succeed{ID: r.JobID, Owner: "other", Now: claimAt, Settlement: job.Settlement{Cost: 10}, Result: json.RawMessage(`{"output":"theirs"}`)})
			return model.Response{Output: "mine", Usage: model.Usage{InputTokens: 7}}, nil
		}
		return model.Response{}, fmt.Errorf("unexpected call %d", n)
	}
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Succeeded || string(got.Result) != `{"output":"theirs"}` || got.Cost != 17 {
		t.Fatalf("stale owner overwrote or lost cost: %+v result %s", got, got.Result)
	}
}

func TestHeartbeatExtendsLeaseAndVisibility(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		r.Progress(5)
		time.Sleep(450 * time.Millisecond) // longer than the 300ms lease TTL
		return ok(1)(ctx, r, n)
	})
	j := f.create("k1", nil)
	done := make(chan struct{})
	var sawProgress atomic.Bool
	go func() {
		defer close(done)
		for i := 0; i < 25; i++ {
			time.Sleep(10 * time.Millisecond)
			if cur, _ := f.store.Get(context.Background(), j.ID); cur.State == job.Running && cur.Progress == 0.5 {
				sawProgress.Store(true)
			}
		}
	}()
	f.deliver(body(j.ID))
	<-done
	if got := f.get(j.ID); got.State != job.Succeeded {
		t.Fatalf("a call longer than the lease TTL must survive through heartbeats: %+v", got)
	}
	if !sawProgress.Load() {
		t.Fatal("progress 5/10 tokens never written by a heartbeat")
	}
	if v := f.queue.last(); v.handle != "r0" || v.d <= 0 || v.d > timing.LeaseTTL {
		t.Fatalf("heartbeat visibility = %+v, want r0 within the lease TTL", v)
	}
}

func TestRouteTimeoutIsRecordedBeforeDeadline(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		<-ctx.Done()
		return model.Response{}, &model.Error{Class: job.Timeout, Usage: model.Usage{InputTokens: 9}, Err: ctx.Err()}
	})
	j := f.create("k1", nil)
	// A function deadline 300ms away: the call must end 50ms before it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, _ := f.w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m0", ReceiptHandle: "r0", Body: body(j.ID)}}})
	if took := time.Since(start); took >= 300*time.Millisecond {
		t.Fatalf("outcome recorded after the function deadline (%s)", took)
	}
	got := f.get(j.ID)
	if got.State != job.Queued || got.ErrorClass != job.Timeout || got.Cost != 9 || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("job = %+v, kept = %v", got, failedIDs(resp))
	}
}

func TestJobDeadlineDuringCallAbandons(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		<-ctx.Done()
		return model.Response{}, &model.Error{Class: job.Timeout, Usage: model.Usage{InputTokens: 4}, Err: ctx.Err()}
	})
	j := f.create("k1", func(j *job.Job) { j.Deadline = job.Millis(time.Now().Add(150 * time.Millisecond)) })
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.DeadlineExceeded || got.Cost != 4 {
		t.Fatalf("job = %+v", got)
	}
}

func TestExpiredDeadlineBeforeClaimAbandonsWithoutCall(t *testing.T) {
	f := setup(t, ok(1))
	j := f.create("k1", func(j *job.Job) { j.Deadline = job.Millis(time.Now().Add(-time.Second)) })
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	if got := f.get(j.ID); got.State != job.Abandoned || got.ErrorClass != job.DeadlineExceeded || got.Attempts != 0 {
		t.Fatalf("job = %+v", got)
	}
	if f.prov.generations(j.ID) != 0 {
		t.Fatal("a job past its deadline was generated")
	}
}

func TestPoisonMessagesGoToTheDLQOnce(t *testing.T) {
	f := setup(t, ok(1))
	done := f.create("k1", nil)
	f.deliver(body(done.ID))
	bodies := []string{"not json", `[]`, `{"job_id":""}`, `{"job_id":"../../etc"}`, body(job.NewID("t1", "never-created")), body(done.ID)}
	r := f.deliver(bodies...)
	if len(r.BatchItemFailures) != 0 {
		t.Fatalf("poison or finished messages must not loop: kept %v", failedIDs(r))
	}
	if f.metrics.get("PoisonMessages") != 5 {
		t.Fatalf("PoisonMessages = %v, want 5", f.metrics.get("PoisonMessages"))
	}
	if len(f.queue.dead) != 5 {
		t.Fatalf("dead-lettered %d (%v), want 5 (the finished job's duplicate is just deleted)", len(f.queue.dead), f.queue.dead)
	}
	for _, want := range []string{"unparseable:not json", "unparseable:[]", "invalid_job_id:", "job_not_found:"} {
		found := false
		for _, d := range f.queue.dead {
			if len(d) >= len(want) && d[:len(want)] == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no dead letter with %q in %v", want, f.queue.dead)
		}
	}
}

func TestShutdownMidCallIsATimeoutNotACancel(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		<-ctx.Done()
		return model.Response{}, &model.Error{Class: job.Cancelled, Usage: model.Usage{InputTokens: 5}, Err: ctx.Err()}
	})
	j := f.create("k1", nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	resp, _ := f.w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m0", ReceiptHandle: "r0", Body: body(j.ID)}}})
	got := f.get(j.ID)
	// The invocation ending is not the user cancelling: the attempt is
	// recorded (on a detached context) and retried.
	if got.State != job.Queued || got.ErrorClass != job.Timeout || got.Cost != 5 || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("job = %+v, kept = %v", got, failedIDs(resp))
	}
}

// hangs is a call that runs until its context ends, notes when in
// stoppedAt, and bills input tokens for what it consumed.
func hangs(stoppedAt *atomic.Int64, input int64) func(context.Context, model.Request, int) (model.Response, error) {
	return func(ctx context.Context, _ model.Request, _ int) (model.Response, error) {
		<-ctx.Done()
		stoppedAt.Store(time.Now().UnixMilli())
		return model.Response{}, &model.Error{Class: job.Cancelled, Usage: model.Usage{InputTokens: input}, Err: ctx.Err()}
	}
}

// flakyHeartbeats is a store whose heartbeats fail as if DynamoDB were
// unavailable while everything else works.
type flakyHeartbeats struct{ *memstore.Store }

func (flakyHeartbeats) Heartbeat(context.Context, job.Heartbeat) (job.Job, error) {
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

func TestUnrenewableLeaseStopsTheCallBeforeItExpires(t *testing.T) {
	var stoppedAt atomic.Int64
	f := setup(t, hangs(&stoppedAt, 3))
	j := f.create("k1", nil)
	f.w = f.newWorker(flakyHeartbeats{f.store})
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	// The claim's lease (300 ms TTL) was never renewed: the call must stop
	// before it ran out, so no other worker can start a second generation.
	if stoppedAt.Load() == 0 {
		t.Fatal("the call was never stopped")
	}
	if got.State != job.Queued || got.ErrorClass != job.Timeout || got.Cost != 3 {
		t.Fatalf("job = %+v", got)
	}
	claimed := got.CreatedAt // the claim happened right after create, well within 10 ms
	if lease := claimed.Add(timing.LeaseTTL); time.UnixMilli(stoppedAt.Load()).After(lease) {
		t.Fatalf("call stopped at %s, after the unrenewed lease ended at %s", time.UnixMilli(stoppedAt.Load()), lease)
	}
}

// replayedClaim answers a claim as an SDK retry of an applied claim would:
// the first try is applied, its answer lost, the retry refused.
type replayedClaim struct{ *memstore.Store }

func (s replayedClaim) Claim(ctx context.Context, c job.Claim) (job.Job, error) {
	if _, err := s.Store.Claim(ctx, c); err != nil {
		return job.Job{}, err
	}
	return s.Store.Claim(ctx, c)
}

func TestOwnAppliedClaimIsRecognised(t *testing.T) {
	f := setup(t, ok(5))
	j := f.create("k1", nil)
	f.w = f.newWorker(replayedClaim{f.store})
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	if got := f.get(j.ID); got.State != job.Succeeded || got.Attempts != 1 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("job = %+v: a claim whose answer was lost must still run the attempt", got)
	}
}

func TestPanickingProviderDoesNotTakeDownTheBatch(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		if strings.Contains(r.Messages[0].Content, "boom") {
			panic("provider bug")
		}
		return ok(1)(ctx, r, n)
	})
	bad := f.create("bad", func(j *job.Job) {
		j.Input = json.RawMessage(`{"messages":[{"role":"user","content":"boom"}],"max_tokens":5}`)
	})
	good := f.create("good", nil)
	r := f.deliver(body(bad.ID), body(good.ID))
	if ids := failedIDs(r); len(ids) != 1 || ids[0] != "m0" {
		t.Fatalf("kept %v, want only the panicking message", ids)
	}
	if f.get(good.ID).State != job.Succeeded {
		t.Fatal("the other job of the batch did not finish")
	}
}

// lostClaim applies every claim but answers it as if the store were
// unavailable: the SDK's retries ran out after the write landed.
type lostClaim struct{ *memstore.Store }

func (s lostClaim) Claim(ctx context.Context, c job.Claim) (job.Job, error) {
	if _, err := s.Store.Claim(ctx, c); err != nil {
		return job.Job{}, err
	}
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

func TestAClaimWhoseAnswerWasLostIsStillOurs(t *testing.T) {
	f := setup(t, ok(5))
	j := f.create("k1", func(j *job.Job) { j.Reserve = 3 })
	f.w = f.newWorker(lostClaim{f.store})
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	if got := f.get(j.ID); got.State != job.Succeeded || got.Attempts != 1 || got.Held != 0 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("job = %+v: the claim was applied, so the attempt runs and returns its hold", got)
	}
}
