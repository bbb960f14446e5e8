package worker_test

import (
	"context"
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

// threeJobs creates three jobs and returns their ids and message bodies
// (delivered together, their messages are r0, r1, r2).
func (f *fixture) threeJobs() ([]string, []string) {
	var ids, bodies []string
	for i := range 3 {
		j := f.create(fmt.Sprintf("k%d", i), nil)
		ids, bodies = append(ids, j.ID), append(bodies, body(j.ID))
	}
	return ids, bodies
}

// stops notes, per job, when its call was stopped.
type stops struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *stops) hang(input int64) func(context.Context, model.Request, int) (model.Response, error) {
	return func(ctx context.Context, r model.Request, _ int) (model.Response, error) {
		<-ctx.Done()
		s.mu.Lock()
		s.at[r.JobID] = time.Now()
		s.mu.Unlock()
		return model.Response{}, &model.Error{Class: job.Cancelled, Usage: model.Usage{InputTokens: input}, Err: ctx.Err()}
	}
}

// watchLeases records each job's lease as claimed (before any renewal).
func (f *fixture) watchLeases(ids []string) map[string]time.Time {
	leases := map[string]time.Time{}
	for len(leases) < len(ids) {
		for _, id := range ids {
			if cur, _ := f.store.Get(context.Background(), id); cur.State == job.Running && leases[id].IsZero() {
				leases[id] = cur.LeaseUntil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return leases
}

// stoppedInTime checks that each job's call stopped before the lease
// its claim took ended (no renewal landed), and that the job was released
// as a timeout with its cost and no hold.
func (f *fixture) stoppedInTime(s *stops, ids []string, claimed map[string]time.Time) {
	f.t.Helper()
	for _, id := range ids {
		s.mu.Lock()
		at := s.at[id]
		s.mu.Unlock()
		if at.IsZero() || at.After(claimed[id]) {
			f.t.Fatalf("job %s: call stopped at %s, not before its unrenewed lease ended at %s", id, at, claimed[id])
		}
		if got := f.get(id); got.State != job.Queued || got.ErrorClass != job.Timeout || got.Cost != 3 || got.Held != 0 {
			f.t.Fatalf("job = %+v: want released as timeout with its cost and no hold", got)
		}
	}
}

func TestAnInvocationsExtensionsGoOutAsOneBatchPerHeartbeat(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		time.Sleep(450 * time.Millisecond) // longer than the 300 ms lease: it lives on renewals
		return ok(1)(ctx, r, n)
	})
	ids, bodies := f.threeJobs()
	if r := f.deliver(bodies...); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept %v", failedIDs(r))
	}
	for _, id := range ids {
		if got := f.get(id); got.State != job.Succeeded {
			t.Fatalf("job = %+v: a call longer than the lease must live on batched renewals", got)
		}
	}
	if n := f.queue.singles(); n != 3 {
		t.Fatalf("%d single ChangeVisibility calls, want only the three claims' own", n)
	}
	batches, entries, full := f.queue.batched(), 0, 0
	for _, b := range batches {
		entries += len(b)
		if len(b) == 3 {
			full++
		}
	}
	// 450 ms at a 20 ms heartbeat: about 22 heartbeats of three messages.
	if len(batches) < 10 || entries < 3*len(batches)-6 || full < len(batches)-2 {
		t.Fatalf("%d requests for %d extensions (%d with all three): the heartbeats did not batch", len(batches), entries, full)
	}
}

func TestAStalledBatchStopsEveryCallItCarriesBeforeItsLeaseEnds(t *testing.T) {
	s := &stops{at: map[string]time.Time{}}
	f := setup(t, s.hang(3))
	release := make(chan struct{})
	defer close(release)
	// The request neither lands nor fails, whatever its context says (a
	// half-open connection), until the test ends.
	f.queue.onBatch = func(context.Context, map[string]time.Duration) map[string]error {
		<-release
		return nil
	}
	ids, bodies := f.threeJobs()
	leases := make(chan map[string]time.Time, 1)
	go func() { leases <- f.watchLeases(ids) }()
	start := time.Now()
	f.deliver(bodies...)
	// The lease guard stops the calls at 150 ms; an attempt must not wait
	// for the stalled request after that (the outcome would wait out the
	// heartbeat's one-second grace).
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the invocation took %s: an outcome waited on the stalled batch", took)
	}
	f.stoppedInTime(s, ids, <-leases)
}

func TestASlowBatchStopsEveryCallItCarriesBeforeItsLeaseEnds(t *testing.T) {
	s := &stops{at: map[string]time.Time{}}
	f := setup(t, s.hang(3))
	// Every request would succeed, but only after longer than the lease
	// itself; it honours its context, as the SDK's calls do.
	var cancelled atomic.Int64
	f.queue.onBatch = func(ctx context.Context, _ map[string]time.Duration) map[string]error {
		select {
		case <-time.After(450 * time.Millisecond):
		case <-ctx.Done():
			cancelled.Add(1)
		}
		return nil
	}
	ids, bodies := f.threeJobs()
	leases := make(chan map[string]time.Time, 1)
	go func() { leases <- f.watchLeases(ids) }()
	// The invocation's context outlives the invocation here (f.deliver
	// cancels its own on return): only the renewals may cancel the request.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := f.w.Handle(ctx, event(bodies...)); err != nil {
		t.Fatal(err)
	}
	f.stoppedInTime(s, ids, <-leases)
	// Once no attempt waits for it, the request is cancelled, as a single
	// call was when its attempt ended: a renewal must not land after the
	// outcome set the message's visibility.
	// (The request notes its cancellation on its own goroutine: wait a
	// little, well short of the 450 ms it would take to answer.)
	for end := time.Now().Add(250 * time.Millisecond); cancelled.Load() == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if cancelled.Load() == 0 {
		t.Fatal("the slow request outlived every attempt it carried")
	}
}

// A refused request, or a refused entry, is what a failed single call was:
// logged, and the lease is still renewed (the lease guard, not the
// message, keeps the call safe), so the calls run to their answers; a
// refused entry is tried again at the next heartbeat.
func TestARefusedOrPartlyFailedBatchStillRenewsEveryLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(h string) bool
	}{
		{"refused", func(string) bool { return true }},
		{"partly failed", func(h string) bool { return h == "r1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
				time.Sleep(450 * time.Millisecond)
				return ok(1)(ctx, r, n)
			})
			f.queue.onBatch = func(_ context.Context, changes map[string]time.Duration) map[string]error {
				failed := map[string]error{}
				for h := range changes {
					if tc.fail(h) {
						failed[h] = &job.Error{Code: job.CodeUnavailable, Message: "ReceiptHandleIsInvalid"}
					}
				}
				return failed
			}
			ids, bodies := f.threeJobs()
			f.deliver(bodies...)
			for _, id := range ids {
				if got := f.get(id); got.State != job.Succeeded {
					t.Fatalf("job = %+v: a failed visibility entry must not cost its call", got)
				}
			}
			per := map[string]int{}
			for _, b := range f.queue.batched() {
				for _, v := range b {
					per[v.handle]++
				}
			}
			if per["r1"] < 10 || per["r1"] < per["r0"]-2 {
				t.Fatalf("entries per message %v: the failed one must be tried again every heartbeat", per)
			}
		})
	}
}

// countedHeartbeats counts the lease writes.
type countedHeartbeats struct {
	*memstore.Store
	n *atomic.Int64
}

func (s countedHeartbeats) Heartbeat(ctx context.Context, h job.Heartbeat) (job.Job, error) {
	s.n.Add(1)
	return s.Store.Heartbeat(ctx, h)
}

// Once the lease horizon reaches the attempt's cap it stops moving: the
// message, already hidden until then, is not extended again, but the lease
// write goes on every heartbeat (a cancel reaches the call through it).
func TestAMessageHiddenUntilTheCapIsNotExtendedAgainButTheLeaseIsWritten(t *testing.T) {
	var stoppedAt atomic.Int64
	f := setup(t, hangs(&stoppedAt, 2))
	var writes atomic.Int64
	f.w = f.newWorker(countedHeartbeats{f.store, &writes}, func(c *worker.Config) {
		// The attempt's cap: its start + the route's 250 ms + 150 ms.
		c.Routes = map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "p", Model: "m1", Price: f.price, Timeout: 250 * time.Millisecond}}}}
	})
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Queued || got.ErrorClass != job.Timeout {
		t.Fatalf("job = %+v: want released at the route's timeout", got)
	}
	var extended int
	for _, b := range f.queue.batched() {
		extended += len(b)
	}
	// Heartbeats at 20, 40, ... 240 ms; the horizon (now + 300 ms) reaches
	// the cap (400 ms) at the 100 ms heartbeat.
	if w := writes.Load(); w < 8 || extended > 6 || extended < 1 {
		t.Fatalf("%d lease writes, %d visibility extensions: want a write every heartbeat and extensions only until the cap", w, extended)
	}
}
