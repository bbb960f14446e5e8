package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// stalledHeartbeats is a store whose heartbeat writes hang as on a
// half-open connection: the call neither lands nor fails, whatever its
// context says, until the test ends. Everything else answers at once.
type stalledHeartbeats struct {
	*memstore.Store
	release chan struct{}
}

func (s stalledHeartbeats) Heartbeat(context.Context, job.Heartbeat) (job.Job, error) {
	<-s.release
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

// slowFailingHeartbeats answers every heartbeat with an error, but only
// after longer than the lease itself: a check against a time taken before
// the call would believe the lease still had time left.
type slowFailingHeartbeats struct{ *memstore.Store }

func (slowFailingHeartbeats) Heartbeat(context.Context, job.Heartbeat) (job.Job, error) {
	time.Sleep(450 * time.Millisecond) // longer than the 300 ms lease
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

// inflight counts the model calls running for one job at once.
type inflight struct {
	mu       sync.Mutex
	now, max int
}

func (c *inflight) enter() {
	c.mu.Lock()
	c.now++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
}

func (c *inflight) leave() {
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
}

func (c *inflight) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func TestStalledHeartbeatNeverLetsASecondWorkerGenerate(t *testing.T) {
	var calls inflight
	var stoppedAt atomic.Int64
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		calls.enter()
		defer calls.leave()
		if n == 1 { // worker A: a long call, stopped only by its context
			<-ctx.Done()
			stoppedAt.Store(time.Now().UnixMilli())
			return model.Response{}, &model.Error{Class: job.Cancelled, Usage: model.Usage{InputTokens: 3}, Err: ctx.Err()}
		}
		time.Sleep(20 * time.Millisecond) // worker B: answers
		return ok(5)(ctx, r, n)
	})
	j := f.create("k1", nil)
	stalled := stalledHeartbeats{Store: f.store, release: make(chan struct{})}
	defer close(stalled.release)
	a := f.newWorker(stalled)

	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = a.Handle(ctx, event(body(j.ID)))
	}()
	// Worker B receives the message when it returns (A's heartbeat did not
	// renew the lease) and claims the job as soon as the lease has expired.
	var lease time.Time
	for lease.IsZero() {
		time.Sleep(5 * time.Millisecond)
		if cur := f.get(j.ID); cur.State == job.Running {
			lease = cur.LeaseUntil
		}
	}
	time.Sleep(time.Until(lease) + 5*time.Millisecond)
	f.deliver(body(j.ID))

	select {
	case <-aDone:
	case <-time.After(3 * time.Second):
		t.Fatal("worker A is still blocked on its stalled heartbeat 3 s after its lease ended: its outcome and cost are never written")
	}
	if calls.peak() != 1 {
		t.Fatalf("%d model calls ran at once for one job: A's call outlived its unrenewed lease", calls.peak())
	}
	if at := time.UnixMilli(stoppedAt.Load()); stoppedAt.Load() == 0 || at.After(lease) {
		t.Fatalf("A's call stopped at %s, not before its lease ended at %s", at, lease)
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 3+5 || got.Held != 0 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("job = %+v, generations %d: want B's success with A's cost kept and no hold left", got, f.prov.generations(j.ID))
	}
}

func TestSlowFailingHeartbeatStopsTheCallBeforeTheLeaseEnds(t *testing.T) {
	var stoppedAt atomic.Int64
	f := setup(t, hangs(&stoppedAt, 3))
	j := f.create("k1", nil)
	f.w = f.newWorker(slowFailingHeartbeats{f.store})
	leases := make(chan time.Time, 1)
	go func() {
		for range 1000 {
			if cur, _ := f.store.Get(context.Background(), j.ID); cur.State == job.Running {
				leases <- cur.LeaseUntil
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		close(leases)
	}()
	start := time.Now()
	f.deliver(body(j.ID))
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the invocation took %s: the finishing write waited on the heartbeat", took)
	}
	lease := <-leases
	if stoppedAt.Load() == 0 || lease.IsZero() {
		t.Fatal("the call was never stopped, or never claimed")
	}
	if at := time.UnixMilli(stoppedAt.Load()); at.After(lease) {
		t.Fatalf("call stopped at %s, after its unrenewed lease ended at %s", at, lease)
	}
	if got := f.get(j.ID); got.State != job.Queued || got.ErrorClass != job.Timeout || got.Cost != 3 {
		t.Fatalf("job = %+v: want released as timeout with its cost", got)
	}
}

// panickingHeartbeats is a store whose heartbeat panics (a bug in a
// driver, say): in Lambda a panic outside the per-message recover kills
// the sandbox and returns the whole batch, leaking every neighbour's hold.
type panickingHeartbeats struct{ *memstore.Store }

func (panickingHeartbeats) Heartbeat(context.Context, job.Heartbeat) (job.Job, error) {
	panic("driver bug")
}

func TestAPanickingHeartbeatStopsOnlyItsOwnCall(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		if r.Messages[0].Content == "slow" {
			<-ctx.Done()
			return model.Response{}, &model.Error{Class: job.Cancelled, Usage: model.Usage{InputTokens: 4}, Err: ctx.Err()}
		}
		return ok(1)(ctx, r, n)
	})
	slow := f.create("slow", func(j *job.Job) {
		j.Input = []byte(`{"messages":[{"role":"user","content":"slow"}],"max_tokens":5}`)
	})
	quick := f.create("quick", nil)
	f.w = f.newWorker(panickingHeartbeats{f.store})
	r := f.deliver(body(slow.ID), body(quick.ID))
	if ids := failedIDs(r); len(ids) != 1 || ids[0] != "m0" {
		t.Fatalf("kept %v, want only the message whose heartbeat panicked (released for a retry)", ids)
	}
	if got := f.get(slow.ID); got.State != job.Queued || got.ErrorClass != job.Internal || got.Cost != 4 || got.Held != 0 {
		t.Fatalf("job = %+v: want released as internal with its cost and no hold", got)
	}
	if f.get(quick.ID).State != job.Succeeded {
		t.Fatal("the neighbour in the batch did not finish")
	}
}

// slowClaims answer a claim only after most of its lease has gone.
type slowClaims struct{ *memstore.Store }

func (s slowClaims) Claim(ctx context.Context, c job.Claim) (job.Job, error) {
	j, err := s.Store.Claim(ctx, c)
	time.Sleep(200 * time.Millisecond) // of a 300 ms lease: inside its 150 ms margin
	return j, err
}

func TestAClaimAnsweredInsideItsLeaseMarginNeverCallsTheModel(t *testing.T) {
	f := setup(t, ok(5))
	j := f.create("k1", nil)
	f.w = f.newWorker(slowClaims{f.store})
	f.deliver(body(j.ID))
	if n := f.prov.calls[j.ID]; n != 0 {
		t.Fatalf("%d model calls on a lease that was about to end when the claim answered", n)
	}
	if got := f.get(j.ID); got.State != job.Queued || got.ErrorClass != job.Timeout || got.Cost != 0 || got.Held != 0 {
		t.Fatalf("job = %+v: want released as timeout, nothing spent, no hold", got)
	}
}

// TestALostAnswerIsChargedItsUpperEstimateAndStopsTheBudget: a call whose
// answer was lost after the request was sent reports estimated usage (the
// rung's worst case for a non-streaming call: the provider generates and
// bills it all the same). The record says its cost is estimated, and the
// budget counts the estimate: a job whose budget covered two worst cases
// gets two attempts, not max_attempts free ones.
func TestALostAnswerIsChargedItsUpperEstimateAndStopsTheBudget(t *testing.T) {
	var in job.Input
	f := setup(t, func(_ context.Context, r model.Request, _ int) (model.Response, error) {
		u := model.Unanswered(r, false)
		return model.Response{}, &model.Error{Class: job.Timeout, Usage: u}
	})
	// Worst case of one attempt: prompt (5 bytes -> 3 + 8 tokens) x 1 +
	// 10 output tokens x 2 = 31 nanocents.
	j := f.create("k1", func(j *job.Job) { j.Budget, j.MaxAttempts, j.Reserve = 62, 8, 31 })
	_ = json.Unmarshal(j.Input, &in)
	if wc := f.routes()["default"].Rungs[0].WorstCase(in); wc != 31 {
		t.Fatalf("worst case %d, want 31", wc)
	}
	for range 4 {
		f.deliver(body(j.ID))
		time.Sleep(120 * time.Millisecond) // past any backoff
	}
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.BudgetExhausted || got.Attempts != 2 || got.Cost != 62 || !got.CostEstimated {
		t.Fatalf("job = %+v: want two attempts charged 31 each, marked estimated, then abandoned for budget", got)
	}
}

// TestTheMessageFollowsTheLeaseFromTheClaim: the queue's visibility
// timeout is six function timeouts (so Lambda can retry throttled
// batches); a worker that died before its first heartbeat must not leave
// its job hidden that long, so the claim's lease is put on the message at
// once, before the first heartbeat.
func TestTheMessageFollowsTheLeaseFromTheClaim(t *testing.T) {
	seen := make(chan visibility, 1)
	var f *fixture
	f = setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		time.Sleep(50 * time.Millisecond) // well before the first heartbeat (200 ms)
		seen <- f.queue.last()
		return ok(1)(ctx, r, n)
	})
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Timing.Heartbeat, c.Timing.LeaseTTL, c.Timing.LeaseMargin, c.Timing.AttemptMargin = 200*time.Millisecond, time.Second, 300*time.Millisecond, 300*time.Millisecond
	})
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	if v := <-seen; v.handle != "r0" || v.d <= 500*time.Millisecond || v.d > time.Second {
		t.Fatalf("visibility during the call = %+v, want r0 hidden for the claim's 1 s lease", v)
	}
}
