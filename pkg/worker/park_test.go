package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/worker"
)

// lot is an in-memory parking lot that can be made unavailable.
type lot struct {
	mu      sync.Mutex
	objects map[string][]byte
	down    bool
	puts    int
}

func newLot() *lot { return &lot{objects: map[string][]byte{}} }

func (l *lot) Put(_ context.Context, key string, body []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.puts++
	if l.down {
		return &job.Error{Code: job.CodeUnavailable}
	}
	l.objects[key] = append([]byte(nil), body...)
	return nil
}

func (l *lot) Get(_ context.Context, key string) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, &job.Error{Code: job.CodeUnavailable}
	}
	b, ok := l.objects[key]
	if !ok {
		return nil, job.NotFound()
	}
	return b, nil
}

func (l *lot) Delete(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.objects, key)
	return nil
}

func (l *lot) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.objects)
}

// landingButFailing is a store whose succeed lands and is answered as
// failed while down is set: the answer lost after the write landed.
type landingButFailing struct {
	*memstore.Store
	down *atomic.Bool
}

func (s landingButFailing) Succeed(ctx context.Context, t job.Succeed) (job.Job, error) {
	j, err := s.Store.Succeed(ctx, t)
	if s.down.Load() {
		return job.Job{}, &job.Error{Code: job.CodeUnavailable}
	}
	return j, err
}

// handleWithin delivers one message to w in an invocation that lasts d, as
// Lambda's deadline bounds it.
func handleWithin(t *testing.T, w *worker.Worker, d time.Duration, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := w.Handle(ctx, event(body(id)))
	if err != nil {
		t.Fatal(err)
	}
	return len(r.BatchItemFailures)
}

// waitLeaseEnd waits until id's lease has run out.
func (f *fixture) waitLeaseEnd(id string) {
	f.t.Helper()
	until := f.get(id).LeaseUntil
	time.Sleep(time.Until(until) + 20*time.Millisecond)
}

// TestAnAnswerTheStoreNeverTakesIsParkedAndSettled: the store refuses
// every finishing write for the whole invocation (longer than any retry);
// the worker parks the paid answer, and keeps the message. The worker is
// then gone (its invocation over: killed, as far as the job can tell); the
// next delivery, once the lease has run out, records the parked answer
// at its exact cost instead of writing the attempt off and generating
// again.
func TestAnAnswerTheStoreNeverTakesIsParkedAndSettled(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", func(j *job.Job) { j.Reserve = 100 })
	var down atomic.Bool
	var tries atomic.Int32
	down.Store(true)
	l := newLot()
	first := f.newWorker(refusingFinishes{f.store, &down, &tries}, func(c *worker.Config) { c.Parking = l })
	if kept := handleWithin(t, first, time.Second, j.ID); kept != 1 {
		t.Fatal("the message of a parked outcome was deleted")
	}
	if l.len() != 1 || tries.Load() < 3 {
		t.Fatalf("%d parked, %d tries: want the outcome parked and the writes retried", l.len(), tries.Load())
	}
	mid := f.get(j.ID)
	if mid.State != job.Running || mid.Held != 100 {
		t.Fatalf("after the parking: %+v, want still running with its hold", mid)
	}

	second := f.newWorker(f.store, func(c *worker.Config) { c.Parking = l })
	f.waitLeaseEnd(j.ID)
	if kept := handleWithin(t, second, time.Second, j.ID); kept != 0 {
		t.Fatal("the parked job's message was kept")
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 40 || got.CostEstimated || got.Held != 0 || got.Attempts != 1 || got.LeaseOwner != "" {
		t.Fatalf("job = %+v, want succeeded on attempt 1 at exactly the call's cost", got)
	}
	if g := f.prov.generations(j.ID); g != 1 {
		t.Fatalf("%d generations, want 1", g)
	}
	if l.len() != 0 || f.metrics.get("OutcomesParked") != 1 || f.metrics.get("OutcomesUnparked") != 1 {
		t.Fatalf("lot holds %d, parked %v, unparked %v: want the outcome taken out once settled",
			l.len(), f.metrics.get("OutcomesParked"), f.metrics.get("OutcomesUnparked"))
	}
}

// TestAParkedCopyGoesOnceTheWriteLands: the store fails the first
// finishing writes, then takes one; the copy parked meanwhile is deleted.
func TestAParkedCopyGoesOnceTheWriteLands(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", nil)
	var down atomic.Bool
	var tries atomic.Int32
	down.Store(true)
	l := newLot()
	f.w = f.newWorker(refusingFinishes{f.store, &down, &tries}, func(c *worker.Config) { c.Parking = l })
	go func() {
		for tries.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		down.Store(false)
	}()
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	if got := f.get(j.ID); got.State != job.Succeeded || got.Cost != 40 {
		t.Fatalf("job = %+v", got)
	}
	if l.puts == 0 || l.len() != 0 {
		t.Fatalf("%d puts, %d left: want the outcome parked at the first failure and deleted once recorded", l.puts, l.len())
	}
}

// TestAnAnswerLostAfterItsWriteLandedCountsOnce: every succeed lands and
// is answered as failed, for the whole invocation. The worker parks it
// (it cannot know), but the record already holds it: the next delivery
// drops the message without reading the lot, and the cost is counted
// once.
func TestAnAnswerLostAfterItsWriteLandedCountsOnce(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", nil)
	var down atomic.Bool
	down.Store(true)
	l := newLot()
	first := f.newWorker(landingButFailing{f.store, &down}, func(c *worker.Config) { c.Parking = l })
	if kept := handleWithin(t, first, time.Second, j.ID); kept != 1 {
		t.Fatal("want the message kept: the worker never saw its write land")
	}
	if kept := handleWithin(t, f.newWorker(f.store, func(c *worker.Config) { c.Parking = l }), time.Second, j.ID); kept != 0 {
		t.Fatal("the message of a succeeded job was kept")
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 40 || got.CostEstimated || got.Held != 0 {
		t.Fatalf("job = %+v, want succeeded at exactly the call's cost, counted once", got)
	}
	if g := f.prov.generations(j.ID); g != 1 {
		t.Fatalf("%d generations, want 1", g)
	}
}

// TestAnAnswerNeitherStoreNorLotTakesIsWrittenOff: with the lot down as
// well, the answer is lost: the next delivery writes the attempt off (its
// hold charged as an estimate, never less than what was paid) and
// generates again. This is the one case the design gives up (both
// services refusing for the whole invocation).
func TestAnAnswerNeitherStoreNorLotTakesIsWrittenOff(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", func(j *job.Job) { j.Reserve = 100 })
	var down atomic.Bool
	var tries atomic.Int32
	down.Store(true)
	l := newLot()
	l.down = true
	first := f.newWorker(refusingFinishes{f.store, &down, &tries}, func(c *worker.Config) { c.Parking = l })
	if kept := handleWithin(t, first, time.Second, j.ID); kept != 1 {
		t.Fatal("message deleted")
	}
	// The lot is back for the next worker, but holds nothing.
	l.mu.Lock()
	l.down = false
	l.mu.Unlock()
	f.waitLeaseEnd(j.ID)
	if kept := handleWithin(t, f.newWorker(f.store, func(c *worker.Config) { c.Parking = l }), time.Second, j.ID); kept != 0 {
		t.Fatal("message kept")
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 2 || got.Cost != 140 || !got.CostEstimated || got.Held != 0 {
		t.Fatalf("job = %+v, want the dead hold (100) charged as an estimate plus the second call (40)", got)
	}
	if f.prov.generations(j.ID) != 2 || f.metrics.get("AttemptsWrittenOff") != 1 {
		t.Fatalf("generations %d, written off %v", f.prov.generations(j.ID), f.metrics.get("AttemptsWrittenOff"))
	}
}
