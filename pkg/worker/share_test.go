package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// errThrottled is how a side table answers when it is throttled.
var errThrottled = errors.New("ProvisionedThroughputExceededException: the buckets table is throttled")

// throttledBuckets answer every call with errThrottled while down, else
// as the shared buckets in memory do.
type throttledBuckets struct {
	down atomic.Bool
	*memstore.Buckets
}

func (b *throttledBuckets) Take(ctx context.Context, t job.Take) (job.Taken, error) {
	if b.down.Load() {
		return job.Taken{}, errThrottled
	}
	return b.Buckets.Take(ctx, t)
}

func (b *throttledBuckets) Give(ctx context.Context, g job.Give) error {
	if b.down.Load() {
		return errThrottled
	}
	return b.Buckets.Give(ctx, g)
}

func (b *throttledBuckets) Raise(ctx context.Context, r job.Raise) error {
	if b.down.Load() {
		return errThrottled
	}
	return b.Buckets.Raise(ctx, r)
}

func (b *throttledBuckets) Learn(ctx context.Context, l job.Learn) error {
	if b.down.Load() {
		return errThrottled
	}
	return b.Buckets.Learn(ctx, l)
}

// throttledSlots answer every call with errThrottled while down.
type throttledSlots struct {
	down atomic.Bool
	*memstore.Slots
}

func (s *throttledSlots) Enter(ctx context.Context, sl job.Slot) (bool, error) {
	if s.down.Load() {
		return false, errThrottled
	}
	return s.Slots.Enter(ctx, sl)
}

func (s *throttledSlots) Leave(ctx context.Context, sl job.Slot) error {
	if s.down.Load() {
		return errThrottled
	}
	return s.Slots.Leave(ctx, sl)
}

// movedClock is the wall clock moved ahead by what the test adds: a
// minute of takes in a second.
type movedClock struct{ ahead atomic.Int64 }

func (c *movedClock) Now() time.Time { return time.Now().UTC().Add(time.Duration(c.ahead.Load())) }

func (c *movedClock) add(d time.Duration) { c.ahead.Add(int64(d)) }

// callsOver delivers one new job every step for a minute on f's clock
// and answers how many were called; every other one must have been
// deferred, uncounted, by the store (its writes unaffected by the side
// table's trouble).
func callsOver(t *testing.T, f *fixture, clock *movedClock, round string) int {
	t.Helper()
	const step = 500 * time.Millisecond
	called := 0
	for i := range int(time.Minute / step) {
		j := f.create(fmt.Sprintf("%s-%d", round, i), nil)
		f.deliver(body(j.ID))
		switch got := f.get(j.ID); {
		case got.State == job.Succeeded && got.Attempts == 1:
			called++
		case got.State == job.Queued && got.Attempts == 0 && got.ErrorClass == job.RateLimited && f.prov.calls[j.ID] == 0:
		default:
			t.Fatalf("%s: job %d neither called nor deferred: %+v, %d calls", round, i, got, f.prov.calls[j.ID])
		}
		clock.add(step)
	}
	return called
}

// TestAThrottledBucketHoldsTheKeyToTheWorkersShare: with the buckets
// table answering only throttles, a key of 40 calls a minute shared by 4
// workers is held in this one to its share, 10 a minute (one call every
// 6 s: a minute of one new job every half second calls about 10 and
// defers the rest), each fallback counted in LimitsLocal by bucket; the
// job store's claims, finishes and deferrals all go through. Once the
// table answers again the shared bucket governs: about 40 a minute.
func TestAThrottledBucketHoldsTheKeyToTheWorkersShare(t *testing.T) {
	f := setup(t, ok(10))
	clock := &movedClock{}
	buckets := &throttledBuckets{Buckets: memstore.NewBuckets()}
	buckets.down.Store(true)
	routes := f.routes()
	r := routes["default"]
	r.Rungs[0].Limit = job.RateLimit{RequestsPerMinute: 40}
	routes["default"] = r
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Routes, c.Buckets, c.Clock, c.Workers = routes, buckets, clock, 4 })

	if n := callsOver(t, f, clock, "down"); n < 9 || n > 11 {
		t.Fatalf("%d calls in a minute with the buckets table throttled, want the worker's share: 10", n)
	}
	fellBack := f.metrics.get("LimitsLocal/bucket")
	if fellBack < 120 {
		t.Fatalf("LimitsLocal by bucket %v, want one per take (120)", fellBack)
	}

	buckets.down.Store(false)
	if n := callsOver(t, f, clock, "up"); n < 38 || n > 41 {
		t.Fatalf("%d calls in a minute with the buckets table answering, want the shared limit: 40", n)
	}
	if got := f.metrics.get("LimitsLocal/bucket"); got != fellBack {
		t.Fatalf("LimitsLocal by bucket went from %v to %v while the table answered", fellBack, got)
	}
}

// inFlight is a provider step that takes a while and records the most
// calls it ever had running at once.
type inFlight struct {
	mu       sync.Mutex
	now, top int
}

func (p *inFlight) step(context.Context, model.Request, int) (model.Response, error) {
	p.mu.Lock()
	p.now++
	p.top = max(p.top, p.now)
	p.mu.Unlock()
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	p.now--
	p.mu.Unlock()
	return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3}}, nil
}

func (p *inFlight) most() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	top := p.top
	p.top = 0
	return top
}

// TestThrottledSlotsHoldTheTenantToTheWorkersShare: with the slots
// answering only throttles, a tenant allowed 8 jobs in flight among 4
// workers runs at most 2 at once here: of 6 delivered together 2 run and
// 4 are deferred uncounted, each fallback counted in LimitsLocal by
// slots. Once the slots answer again the shared limit governs and all 6
// run together; when they fail again, the jobs that ran have given their
// local places back, and 2 run again.
func TestThrottledSlotsHoldTheTenantToTheWorkersShare(t *testing.T) {
	p := &inFlight{}
	f := setup(t, p.step)
	slots := &throttledSlots{Slots: memstore.NewSlots()}
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Slots, c.InFlight, c.Workers = slots, func(string) int { return 8 }, 4
	})
	batch := func(round string) (ran, deferred int) {
		var bodies []string
		var ids []string
		for i := range 6 {
			j := f.create(fmt.Sprintf("%s-%d", round, i), nil)
			bodies, ids = append(bodies, body(j.ID)), append(ids, j.ID)
		}
		f.deliver(bodies...)
		for _, id := range ids {
			switch got := f.get(id); {
			case got.State == job.Succeeded && got.Attempts == 1:
				ran++
			case got.State == job.Queued && got.Attempts == 0 && got.ErrorClass == job.RateLimited && f.prov.calls[id] == 0:
				deferred++
			default:
				t.Fatalf("%s: job neither ran nor was deferred: %+v", round, got)
			}
		}
		return ran, deferred
	}

	slots.down.Store(true)
	if ran, deferred := batch("down"); ran != 2 || deferred != 4 {
		t.Fatalf("slots throttled: %d ran, %d deferred; want 2 and 4 (8 over 4 workers)", ran, deferred)
	}
	if top := p.most(); top != 2 {
		t.Fatalf("slots throttled: %d calls at once, want at most 2", top)
	}
	if n := f.metrics.get("LimitsLocal/slots"); n != 6 {
		t.Fatalf("LimitsLocal by slots %v, want one per enter (6)", n)
	}
	slots.down.Store(false)
	if ran, _ := batch("up"); ran != 6 {
		t.Fatalf("slots answering: %d ran, want all 6 under the shared limit of 8", ran)
	}
	if top := p.most(); top != 6 {
		t.Fatalf("slots answering: %d calls at once, want all 6", top)
	}
	if n := f.metrics.get("LimitsLocal/slots"); n != 6 {
		t.Fatalf("LimitsLocal by slots %v after the slots answered, want still 6", n)
	}
	slots.down.Store(true)
	if ran, deferred := batch("again"); ran != 2 || deferred != 4 {
		t.Fatalf("slots throttled again: %d ran, %d deferred, want 2 and 4 (every local place given back)", ran, deferred)
	}
}

// TestALocalTakeCountsTokensAndGetsItsOverTakeBack: the local share
// counts tokens as the shared bucket does. A key of 5,040 tokens a minute
// over 4 workers is 21 a second here; a call's worst case is 21 tokens
// (a second of the share), and the call used 5, so the 16 over-taken come
// back to the local bucket: the next job waits about a quarter of a
// second (in place, or deferred that long), not the whole second the take
// cost.
func TestALocalTakeCountsTokensAndGetsItsOverTakeBack(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	})
	buckets := &throttledBuckets{Buckets: memstore.NewBuckets()}
	buckets.down.Store(true)
	routes := f.routes()
	r := routes["default"]
	r.Rungs[0].Limit = job.RateLimit{TokensPerMinute: 4 * 21 * 60}
	routes["default"] = r
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Routes, c.Buckets, c.Workers = routes, buckets, 4 })
	a := f.create("k1", nil)
	f.deliver(body(a.ID))
	if got := f.get(a.ID); got.State != job.Succeeded {
		t.Fatalf("the first job on a full local bucket: %+v", got)
	}
	b := f.create("k2", nil)
	sent := time.Now()
	f.deliver(body(b.ID))
	switch got := f.get(b.ID); {
	case got.State == job.Succeeded:
		// waited in place: a wait of at most half the lease, 150 ms
	case got.State == job.Queued && got.NotBefore.Sub(sent) < 600*time.Millisecond:
	default:
		t.Fatalf("the second job: %s, deferred %s; want it called or deferred about 240ms (its tokens given back), not a second",
			got.State, got.NotBefore.Sub(sent))
	}
	if n := f.metrics.get("LimitsLocal/bucket"); n < 2 {
		t.Fatalf("LimitsLocal by bucket %v, want one per take", n)
	}
}
