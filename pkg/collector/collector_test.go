package collector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// batches is an in-memory Batches.
type batches struct {
	mu   sync.Mutex
	open map[string]job.BatchRecord
}

func (b *batches) OpenBatch(_ context.Context, r job.BatchRecord) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.open[r.ID]; ok {
		return job.Errorf(job.CodeConflict, "batch %s exists", r.ID)
	}
	b.open[r.ID] = r
	return nil
}

func (b *batches) Batches(context.Context) ([]job.BatchRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []job.BatchRecord
	for _, r := range b.open {
		if r.State != job.Settled {
			out = append(out, r)
		}
	}
	return out, nil
}

func (b *batches) SaveBatch(_ context.Context, r job.BatchRecord) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open[r.ID] = r
	return nil
}

// queue records the jobs re-sent.
type queue struct {
	mu   sync.Mutex
	sent []string
}

func (q *queue) Send(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, id)
	return nil
}

// failingSubmit is a batcher whose first submit fails after the batch
// record was opened: a collector that died before it submitted.
type failingSubmit struct {
	*fake.Provider
	failed bool
}

func (f *failingSubmit) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	if !f.failed {
		f.failed = true
		return "", errors.New("the collector died")
	}
	return f.Provider.SubmitBatch(ctx, key, reqs)
}

type fixture struct {
	t       *testing.T
	store   *memstore.Store
	batches *batches
	queue   *queue
	prov    *fake.Provider
	c       *collector.Collector
	route   job.Route
}

// The standard price is 4 and 8 nanocents a token, the batch lane's 2
// and 4.
func setup(t *testing.T, batchLatency time.Duration, wrap func(*fake.Provider) model.Provider) *fixture {
	f := &fixture{t: t, store: memstore.New(), batches: &batches{open: map[string]job.BatchRecord{}}, queue: &queue{}}
	// The fake invoices at the standard price (Billed).
	f.prov = fake.New(fake.Config{BatchLatency: batchLatency, Price: job.Price{InputPerToken: 4, OutputPerToken: 8}})
	std := job.Rung{Provider: "f", Model: "m", Price: job.Price{InputPerToken: 4, OutputPerToken: 8}, Timeout: time.Second}
	b := std
	b.Lane, b.Base, b.Price, b.Timeout, b.Completion, b.MaxJobs = job.Batch, std.Price, job.Price{InputPerToken: 2, OutputPerToken: 4}, 0, time.Hour, 100
	std.Lanes = []job.Rung{b}
	f.route = job.Route{Rungs: []job.Rung{std}}
	var p model.Provider = f.prov
	if wrap != nil {
		p = wrap(f.prov)
	}
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue,
		Providers: map[string]model.Provider{"f": p}, Routes: map[string]job.Route{"default": f.route},
		Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}})
	return f
}

// enlisted is a job a worker claimed and enlisted in the batch lane, its
// lease until until.
func (f *fixture) enlisted(key, content string, until time.Time) job.Job {
	return f.enlistedWith(key, job.Input{Messages: []job.Message{{Role: "user", Content: content}}, MaxTokens: 10}, until)
}

// enlistedWith is enlisted for input input.
func (f *fixture) enlistedWith(key string, input job.Input, until time.Time) job.Job {
	ctx, now := context.Background(), time.Now()
	in, _ := json.Marshal(input)
	j := job.Job{ID: job.NewID("t1", key), Tenant: "t1", RequestKey: key, InputHash: "sha256:" + key, Model: "default", Input: in, State: job.Queued,
		MaxAttempts: 3, Budget: job.Cents(1), Deadline: now.Add(2 * time.Hour), Version: 1, CreatedAt: job.Millis(now), UpdatedAt: job.Millis(now)}
	j.Reserve = f.route.Reserve(input, nil)
	if _, err := f.store.Create(ctx, j); err != nil {
		f.t.Fatal(err)
	}
	owner := "w_" + key
	if _, err := f.store.Claim(ctx, job.Claim{ID: j.ID, Owner: owner, Now: now.Add(time.Millisecond), LeaseUntil: now.Add(time.Minute)}); err != nil {
		f.t.Fatal(err)
	}
	got, err := f.store.Enlist(ctx, job.Enlist{ID: j.ID, Owner: owner, Now: now.Add(2 * time.Millisecond), Lane: job.LaneKey("default", 0), Until: until})
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

func (f *fixture) run() {
	f.t.Helper()
	if err := f.c.Run(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(id string) job.Job {
	j, err := f.store.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

func TestABatchIsSubmittedPolledAndSettledAtTheBatchPrice(t *testing.T) {
	f := setup(t, 0, nil)
	var ids []string
	for i := range 3 {
		ids = append(ids, f.enlisted(fmt.Sprint("k", i), fmt.Sprint("question ", i), time.Now().Add(time.Hour)).ID)
	}
	f.run() // collects and submits: the lane's window is zero
	for _, id := range ids {
		if j := f.get(id); j.Batch == "" || j.Enlisted != "" || j.LeaseOwner != job.BatchOwner(j.Batch) {
			t.Fatalf("after the first run: %+v, want collected", j)
		}
	}
	f.run() // the batch ended: settled
	for _, id := range ids {
		j := f.get(id)
		var res struct{ Usage model.Usage }
		if err := json.Unmarshal(j.Result, &res); err != nil {
			t.Fatal(err)
		}
		u := res.Usage
		half := job.Nanocents(2*u.InputTokens + 4*u.OutputTokens)
		if j.State != job.Succeeded || j.ResultLane != job.Batch || j.Held != 0 || j.Attempts != 1 || u.OutputTokens == 0 ||
			j.Cost != half || j.Saved != half || 2*j.Cost != f.prov.Billed(id) {
			t.Errorf("job %+v, want succeeded in the batch lane at half the standard price", j)
		}
		if want := []job.AttemptLane{{Attempt: 1, Lane: job.Batch}}; !slices.Equal(j.AttemptLanes, want) {
			t.Errorf("job %s: attempt lanes %v, want %v", id, j.AttemptLanes, want)
		}
		if f.prov.Generations(id) != 1 || !slices.Equal(f.prov.Lanes(id), []job.Lane{job.Batch}) {
			t.Errorf("job %s: %d generations, lanes %v", id, f.prov.Generations(id), f.prov.Lanes(id))
		}
	}
	if open, _ := f.batches.Batches(context.Background()); len(open) != 0 {
		t.Errorf("open batches after settling: %+v", open)
	}
	f.run() // nothing left: a third run settles nothing twice
	for _, id := range ids {
		if f.prov.Generations(id) != 1 {
			t.Errorf("job %s generated again", id)
		}
	}
}

func TestALaneWaitsForItsWindowOrAFullBatch(t *testing.T) {
	f := setup(t, 0, nil)
	f.route.Rungs[0].Lanes[0].Window = time.Hour
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route}})
	j := f.enlisted("k", "one", time.Now().Add(time.Hour))
	f.run()
	if got := f.get(j.ID); got.Batch != "" {
		t.Fatalf("collected before its window: %+v", got)
	}
}

func TestAFailedItemGoesBackToTheQueueAndADeterministicOneEnds(t *testing.T) {
	f := setup(t, 0, nil)
	retry := f.enlisted("r", "[[fake:fail=provider_error]] flaky", time.Now().Add(time.Hour))
	end := f.enlisted("e", "[[fake:fail=content_filtered]] bad", time.Now().Add(time.Hour))
	f.run()
	f.run()
	if got := f.get(retry.ID); got.State != job.Queued || got.ErrorClass != job.ProviderError || got.Held != 0 || got.Cost == 0 {
		t.Errorf("retryable item: %+v, want queued again with its prompt's cost", got)
	}
	if got := f.get(end.ID); got.State != job.Failed || got.ErrorClass != job.ContentFiltered || got.Held != 0 {
		t.Errorf("deterministic item: %+v, want failed", got)
	}
	if !slices.Equal(f.queue.sent, []string{retry.ID}) {
		t.Errorf("re-sent %v, want the retryable one", f.queue.sent)
	}
}

// A job whose lease ends before its batch does goes back to the queue; the
// batch's answer for it, when it comes, is settled as billed, once.
func TestAJobTheBatchCannotServeInTimeIsHandedBackAndItsLateAnswerSettled(t *testing.T) {
	f := setup(t, 300*time.Millisecond, nil)
	clock := &clock{now: time.Now()}
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue, Clock: clock,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route}})
	j := f.enlisted("k", "slow", time.Now().Add(90*time.Second))
	f.run() // submitted: its lease ends beyond the next collector run
	clock.now = clock.now.Add(40 * time.Second)
	f.run() // not ended; the lease ends before the next run: handed back
	got := f.get(j.ID)
	if got.State != job.Queued || got.Held != 0 || got.Cost != 0 || got.LeaseOwner != "" || !slices.Equal(f.queue.sent, []string{j.ID}) {
		t.Fatalf("after the hand-back: %+v, sent %v", got, f.queue.sent)
	}
	time.Sleep(350 * time.Millisecond)
	clock.now = clock.now.Add(time.Second)
	f.run() // the batch ended: its answer is billed, so it is on the record
	f.run()
	got = f.get(j.ID)
	// The fake invoices at the standard price; the batch lane's is half.
	if got.State != job.Queued || got.Held != 0 || got.Cost == 0 || 2*got.Cost != f.prov.Billed(j.ID) || f.prov.Generations(j.ID) != 1 {
		t.Fatalf("after the late answer: %+v, want still queued, its cost half the fake's bill %s", got, f.prov.Billed(j.ID))
	}
}

// A failed item that comes after its job was handed back is a write of
// its own: the hand-back and the item's release share the batch's owner,
// and taken for a retry of the hand-back the item's release would keep
// no cost and send the job's message a second time. It is refused, and
// its cost stays on the record.
func TestAFailedItemAfterTheHandBackKeepsItsCost(t *testing.T) {
	f := setup(t, 300*time.Millisecond, nil)
	clock := &clock{now: time.Now()}
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue, Clock: clock,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route}})
	j := f.enlisted("k", "[[fake:fail=provider_error]] slow and flaky", time.Now().Add(90*time.Second))
	f.run() // submitted
	clock.now = clock.now.Add(40 * time.Second)
	f.run() // handed back
	time.Sleep(350 * time.Millisecond)
	clock.now = clock.now.Add(time.Second)
	f.run() // the batch ended: the failed item is billed
	f.run()
	got := f.get(j.ID)
	if f.prov.Billed(j.ID) == 0 {
		t.Fatal("the fake billed nothing for the failed item: the test proves nothing")
	}
	if got.State != job.Queued || got.Held != 0 || 2*got.Cost != f.prov.Billed(j.ID) || !slices.Equal(f.queue.sent, []string{j.ID}) {
		t.Fatalf("after the late failed item: %+v, sent %v; want still queued, its cost half the fake's bill %s, sent once",
			got, f.queue.sent, f.prov.Billed(j.ID))
	}
}

// A collector that dies between opening a batch and submitting it loses
// nothing: the next run submits the same jobs, once.
func TestACollectorThatDiesBeforeSubmittingIsCarriedOn(t *testing.T) {
	var fs *failingSubmit
	f := setup(t, 0, func(p *fake.Provider) model.Provider { fs = &failingSubmit{Provider: p}; return fs })
	j := f.enlisted("k", "hello", time.Now().Add(time.Hour))
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("the failed submit was not reported")
	}
	open, _ := f.batches.Batches(context.Background())
	if len(open) != 1 || open[0].State != job.Sealed || len(open[0].Jobs) != 1 {
		t.Fatalf("open batches %+v, want one sealed with the job", open)
	}
	f.run() // submits
	f.run() // settles
	if got := f.get(j.ID); got.State != job.Succeeded || f.prov.Generations(j.ID) != 1 {
		t.Fatalf("job %+v, %d generations", got, f.prov.Generations(j.ID))
	}
}

// clock is a collector's clock a test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// A job whose lease ends before a batch could be collected, or cancelled
// while it waited, leaves the lane before any batch: handed back
// uncounted (and re-sent) or settled, its hold returned either way,
// nothing billed.
func TestAJobThatCannotWaitForABatchLeavesTheLane(t *testing.T) {
	f := setup(t, 0, nil)
	soon := f.enlisted("soon", "due soon", time.Now().Add(30*time.Second))
	gone := f.enlisted("gone", "cancelled", time.Now().Add(time.Hour))
	if _, err := f.store.Cancel(context.Background(), job.Cancel{ID: gone.ID, Tenant: "t1", Now: time.Now().Add(3 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	f.run()
	// Nothing was sent for it: the stay was no attempt (a job on its last
	// one is not ended for it).
	if got := f.get(soon.ID); got.State != job.Queued || got.Held != 0 || got.Cost != 0 || got.Enlisted != "" || got.Batch != "" ||
		got.Attempts != 0 || got.ErrorClass != job.CapacityUnavailable {
		t.Errorf("due soon: %+v, want handed back uncounted", got)
	}
	if got := f.get(gone.ID); got.State != job.Abandoned || got.Held != 0 || got.Cost != 0 || got.LeaseOwner != "" || got.Enlisted != "" {
		t.Errorf("cancelled: %+v, want abandoned holding nothing", got)
	}
	if !slices.Equal(f.queue.sent, []string{soon.ID}) || f.prov.Calls(soon.ID)+f.prov.Calls(gone.ID) != 0 {
		t.Errorf("re-sent %v, calls %d %d", f.queue.sent, f.prov.Calls(soon.ID), f.prov.Calls(gone.ID))
	}
}

// gets counts the job reads a collector makes.
type gets struct {
	collector.Store
	mu sync.Mutex
	n  int
}

func (g *gets) Get(ctx context.Context, id string) (job.Job, error) {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	return g.Store.Get(ctx, id)
}

func (g *gets) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// A run that finds a batch unfinished reads none of its jobs until the
// earliest of their leases is due (the record keeps it): a batch of
// thousands costs no reads a minute while it runs. When one is due, the
// jobs are read and it is handed back.
func TestAnUnfinishedBatchIsReadOnlyWhenAJobIsDue(t *testing.T) {
	f := setup(t, time.Hour, nil)
	g := &gets{Store: f.store}
	clock := &clock{now: time.Now()}
	f.c = collector.New(collector.Config{Store: g, Batches: f.batches, Queue: f.queue, Clock: clock,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route}})
	soon := f.enlisted("soon", "due in ten minutes", clock.now.Add(10*time.Minute))
	late := f.enlisted("late", "due in an hour", clock.now.Add(time.Hour))
	f.run() // collects and submits
	before := g.count()
	for range 3 {
		clock.now = clock.now.Add(time.Minute)
		f.run()
	}
	if n := g.count() - before; n != 0 {
		t.Errorf("%d job reads while no job was due", n)
	}
	// soon's lease ends within a period. It is kept to the millisecond, so
	// a second more keeps the test off that boundary.
	clock.now = clock.now.Add(6*time.Minute + time.Second)
	f.run()
	if got := f.get(soon.ID); got.State != job.Queued || got.Held != 0 {
		t.Fatalf("due job: %+v, want handed back", got)
	}
	if got := f.get(late.ID); got.State != job.Running || got.Batch == "" {
		t.Fatalf("the other job: %+v, want still in its batch", got)
	}
	before = g.count()
	clock.now = clock.now.Add(time.Minute)
	f.run()
	if n := g.count() - before; n != 0 {
		t.Errorf("%d job reads after the hand-back, with the next lease an hour off", n)
	}
}

// A lane whose provider takes no batch under MinJobs waits for that many;
// a job that cannot wait is handed back all the same.
func TestALaneWaitsForTheFewestItsProviderTakes(t *testing.T) {
	f := setup(t, 0, nil)
	f.route.Rungs[0].Lanes[0].MinJobs = 3
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route}})
	a := f.enlisted("a", "one", time.Now().Add(time.Hour))
	soon := f.enlisted("soon", "due soon", time.Now().Add(30*time.Second))
	b := f.enlisted("b", "two", time.Now().Add(time.Hour))
	f.run()
	if got := f.get(a.ID); got.Batch != "" {
		t.Fatalf("collected with two waiting of the three it takes: %+v", got)
	}
	if got := f.get(soon.ID); got.State != job.Queued {
		t.Fatalf("the job that could not wait: %+v, want handed back", got)
	}
	f.enlisted("c", "three", time.Now().Add(time.Hour))
	f.run()
	if got := f.get(b.ID); got.Batch == "" {
		t.Fatalf("not collected with three waiting: %+v", got)
	}
}
