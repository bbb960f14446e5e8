package collector_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// faults decides, call by call, what becomes of a collector's call to the
// store, the batch records, the queue or the provider: it goes through;
// it is refused before it lands; it lands and its answer is lost (an
// error all the same); or the collector dies there (its run's context
// ends), as docs/lanes.md, "The batch lane", says a collector may
// at any step.
type faults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	p      float64 // of each failure kind
	die    float64
	refuse float64 // of a batch create the provider refuses (4xx: nothing made)
	cancel context.CancelFunc
	counts map[string]int
}

var errFault = &job.Error{Code: job.CodeUnavailable, Message: "injected fault"}

// roll is what becomes of one call: before (refused), after (landed,
// answered failed); a death ends the run's context first.
func (f *faults) roll(ctx context.Context) (before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return true, false
	}
	switch x := f.rng.Float64(); {
	case x < f.die:
		f.counts["death"]++
		f.cancel()
		return true, false
	case x < f.die+f.p:
		f.counts["refused"]++
		return true, false
	case x < f.die+2*f.p:
		f.counts["answer lost"]++
		return false, true
	}
	return false, false
}

// write runs a call that changes something under a roll.
func write[T any](ctx context.Context, f *faults, call func() (T, error)) (T, error) {
	var zero T
	before, after := f.roll(ctx)
	if before {
		return zero, errors.Join(errFault, ctx.Err())
	}
	v, err := call()
	if after {
		return zero, errFault
	}
	return v, err
}

type faultyStore struct {
	collector.Store
	f *faults
}

func (s faultyStore) Get(ctx context.Context, id string) (job.Job, error) {
	return write(ctx, s.f, func() (job.Job, error) { return s.Store.Get(ctx, id) })
}

func (s faultyStore) Enlisted(ctx context.Context, lane string, limit int) ([]job.Enlistee, error) {
	return write(ctx, s.f, func() ([]job.Enlistee, error) { return s.Store.Enlisted(ctx, lane, limit) })
}

func (s faultyStore) Collect(ctx context.Context, c job.Collect) (job.Job, error) {
	return write(ctx, s.f, func() (job.Job, error) { return s.Store.Collect(ctx, c) })
}

func (s faultyStore) Succeed(ctx context.Context, c job.Succeed) (job.Job, error) {
	return write(ctx, s.f, func() (job.Job, error) { return s.Store.Succeed(ctx, c) })
}

func (s faultyStore) Release(ctx context.Context, c job.Release) (job.Job, error) {
	return write(ctx, s.f, func() (job.Job, error) { return s.Store.Release(ctx, c) })
}

func (s faultyStore) Defer(ctx context.Context, c job.Defer) (job.Job, error) {
	return write(ctx, s.f, func() (job.Job, error) { return s.Store.Defer(ctx, c) })
}

func (s faultyStore) End(ctx context.Context, c job.End) (job.Job, error) {
	return write(ctx, s.f, func() (job.Job, error) { return s.Store.End(ctx, c) })
}

type faultyBatches struct {
	b collector.Batches
	f *faults
}

func (b faultyBatches) OpenBatch(ctx context.Context, r job.BatchRecord) error {
	_, err := write(ctx, b.f, func() (int, error) { return 0, b.b.OpenBatch(ctx, r) })
	return err
}

func (b faultyBatches) Batches(ctx context.Context) ([]job.BatchRecord, error) {
	return write(ctx, b.f, func() ([]job.BatchRecord, error) { return b.b.Batches(ctx) })
}

func (b faultyBatches) SaveBatch(ctx context.Context, r job.BatchRecord) error {
	_, err := write(ctx, b.f, func() (int, error) { return 0, b.b.SaveBatch(ctx, r) })
	return err
}

type faultyQueue struct {
	collector.Queue
	f *faults
}

func (q faultyQueue) Send(ctx context.Context, id, tenant string) error {
	_, err := write(ctx, q.f, func() (int, error) { return 0, q.Queue.Send(ctx, id, tenant) })
	return err
}

type faultyProvider struct {
	*fake.Provider
	f *faults
}

func (p faultyProvider) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	if p.f.refused() {
		return "", &model.Error{Class: job.InvalidRequest, Detail: "injected 400"}
	}
	return write(ctx, p.f, func() (string, error) { return p.Provider.SubmitBatch(ctx, key, reqs) })
}

// refused is whether the provider refuses a batch create outright (a 4xx:
// no batch made), a roll of its own.
func (f *faults) refused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.Float64() < f.refuse {
		f.counts["create refused"]++
		return true
	}
	return false
}

func (p faultyProvider) BatchEnded(ctx context.Context, id string) (bool, error) {
	return write(ctx, p.f, func() (bool, error) { return p.Provider.BatchEnded(ctx, id) })
}

// BatchResults may fail after reporting some results: the next run reads
// them all again.
func (p faultyProvider) BatchResults(ctx context.Context, id string, each func(string, model.Response, error) error) error {
	_, err := write(ctx, p.f, func() (int, error) { return 0, p.Provider.BatchResults(ctx, id, each) })
	return err
}

// Under every fault a collector meets (calls refused, calls that landed
// and answered failed, batch creates the provider refuses 4xx, the
// collector dying between any two of its steps), run after run until
// nothing is left in the lane: every job is
// generated at most once, and settled once at the batch price, its hold
// returned; a job the batch could not serve in time is back in the
// queue, its late answer settled as billed; a cancelled one is settled.
func TestTheBatchLaneLosesNothingUnderFaults(t *testing.T) {
	for seed := range uint64(64) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { underFaults(t, seed) })
	}
}

func underFaults(t *testing.T, seed uint64) {
	f := setup(t, 0, nil)
	clock := &clock{now: time.Now()}
	// A batch ends 15 runs after its submit, on the runs' clock: every
	// seed takes the same path whatever the machine's speed.
	f.prov = fake.New(fake.Config{BatchLatency: 300 * time.Second, Clock: clock, Price: job.Price{InputPerToken: 4, OutputPerToken: 8}})
	f.route.Rungs[0].Lanes[0].MaxJobs = 40 // several batches
	fl := &faults{rng: rand.New(rand.NewPCG(seed, seed)), p: 0.05, die: 0.01, refuse: 0.1, counts: map[string]int{}}
	c := collector.New(collector.Config{Store: faultyStore{f.store, fl}, Batches: faultyBatches{f.batches, fl},
		Queue: faultyQueue{f.queue, fl}, Providers: map[string]model.Provider{"f": faultyProvider{f.prov, fl}},
		Routes: map[string]job.Route{"default": f.route}, Clock: clock, Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}})
	var ids []string
	for i := range 100 {
		until := time.Now().Add(2 * time.Hour)
		if i%7 == 0 {
			until = time.Now().Add(150 * time.Second) // due back before its batch ends
		}
		ids = append(ids, f.enlisted(fmt.Sprint("s", seed, "k", i), fmt.Sprint("question ", i), until).ID)
	}
	for run := 0; run < 300 && !f.settled(ids); run++ {
		if run == 3 { // cancels while some wait and some are in a batch
			for _, id := range ids[1:4] {
				_, _ = f.store.Cancel(context.Background(), job.Cancel{ID: id, Tenant: "t1", Now: time.Now().Add(5 * time.Millisecond)})
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		fl.mu.Lock()
		fl.cancel = cancel
		fl.mu.Unlock()
		_ = c.Run(ctx)
		cancel()
		clock.now = clock.now.Add(20 * time.Second)
	}
	if !f.settled(ids) {
		open, _ := f.batches.Batches(context.Background())
		for _, b := range open {
			t.Logf("open batch %s %s provider %q jobs %d hand back at %s (clock %s)", b.ID, b.State, b.ProviderID, len(b.Jobs), b.HandBackAt, clock.now)
		}
		for _, id := range ids {
			if j := f.get(id); strings.HasPrefix(j.LeaseOwner, "batch:") {
				t.Logf("job %s %s owner %s enlisted %q batch %q lease until %s", id, j.State, j.LeaseOwner, j.Enlisted, j.Batch, j.LeaseUntil)
			}
		}
		t.Fatal("the lane still holds jobs after 300 runs")
	}
	states := map[job.State]int{}
	for _, id := range ids {
		j := f.get(id)
		states[j.State]++
		billed := f.prov.Billed(id) // at the standard price; the batch lane's is half
		switch {
		case f.prov.Generations(id) > 1:
			t.Errorf("job %s generated %d times", id, f.prov.Generations(id))
		case j.Held != 0 || j.State == job.Running:
			t.Errorf("job %s left %s holding %s", id, j.State, j.Held)
		case 2*j.Cost != billed || j.CostEstimated:
			t.Errorf("job %s (%s): cost %s (estimated %v), want half the bill %s", id, j.State, j.Cost, j.CostEstimated, billed)
		case j.State == job.Succeeded && j.ResultLane != job.Batch:
			t.Errorf("job %s succeeded in lane %q", id, j.ResultLane)
		}
	}
	t.Logf("seed %d: %v; faults %v", seed, states, fl.counts)
	if states[job.Succeeded] == 0 || states[job.Queued] == 0 || fl.counts["death"] == 0 || fl.counts["answer lost"] == 0 {
		t.Errorf("the run did not meet what it is for: states %v, faults %v", states, fl.counts)
	}
}

// settled reports whether no job of ids is left in the lane or a batch,
// and no batch is open.
func (f *fixture) settled(ids []string) bool {
	if open, _ := f.batches.Batches(context.Background()); len(open) > 0 {
		return false
	}
	for _, id := range ids {
		if j := f.get(id); strings.HasPrefix(j.LeaseOwner, "batch:") {
			return false
		}
	}
	return true
}
