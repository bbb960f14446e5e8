package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// ladder is a two-rung route: rung 0 on provider "p" (model m1, the
// fixture's price), rung 1 on provider "q" (model m2, ten times dearer).
type ladder struct {
	*fixture
	second   *provider
	dear     job.Price
	fallback []job.ErrorClass
}

func setupLadder(t *testing.T, first, second func(context.Context, model.Request, int) (model.Response, error), tweak func(*job.Route)) *ladder {
	f := setup(t, first)
	l := &ladder{fixture: f, second: newProvider(second), fallback: []job.ErrorClass{job.RateLimited, job.Overloaded, job.Timeout}}
	l.dear, _ = job.PricePerMillion("0.01", "0.02") // 10 and 20 nanocents per token
	route := job.Route{Rungs: []job.Rung{
		{Provider: "p", Model: "m1", Price: f.price, Timeout: 2 * time.Second},
		{Provider: "q", Model: "m2", Price: l.dear, Timeout: 2 * time.Second},
	}, FallbackOn: l.fallback}
	if tweak != nil {
		tweak(&route)
	}
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Routes = map[string]job.Route{"default": route}
		c.Providers = map[string]model.Provider{"p": f.prov, "q": l.second}
	})
	return l
}

func fail(class job.ErrorClass, usage model.Usage) func(context.Context, model.Request, int) (model.Response, error) {
	return func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: class, Detail: "scripted", Usage: usage}
	}
}

func answer(name string, usage model.Usage) func(context.Context, model.Request, int) (model.Response, error) {
	return func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "ok", Model: name, Usage: usage}, nil
	}
}

func TestFallbackToTheNextRungWithinOneAttempt(t *testing.T) {
	l := setupLadder(t, fail(job.RateLimited, model.Usage{InputTokens: 10}), answer("m2-2026", model.Usage{InputTokens: 7, OutputTokens: 3}), nil)
	j := l.create("k1", nil)
	if r := l.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := l.get(j.ID)
	// Both rungs' usage, each at its own rung's price: 10x1 + (7x10 + 3x20).
	if got.State != job.Succeeded || got.Attempts != 1 || got.Cost != 10+70+60 || got.ResultModel != "q/m2-2026" || got.Held != 0 {
		t.Fatalf("job = %+v", got)
	}
	if l.prov.calls[j.ID] != 1 || l.second.calls[j.ID] != 1 {
		t.Fatalf("calls: rung 0 %d, rung 1 %d, want 1 and 1", l.prov.calls[j.ID], l.second.calls[j.ID])
	}
	if l.metrics.get("Fallbacks/rate_limited") != 1 {
		t.Fatalf("Fallbacks metric = %v", l.metrics.counts)
	}
}

func TestNoFallbackOnAClassTheRouteDoesNotName(t *testing.T) {
	l := setupLadder(t, fail(job.ContentFiltered, model.Usage{InputTokens: 4}), answer("m2", model.Usage{}), nil)
	j := l.create("k1", nil)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Failed || got.ErrorClass != job.ContentFiltered || got.Cost != 4 || l.second.calls[j.ID] != 0 {
		t.Fatalf("job = %+v, rung 1 calls %d", got, l.second.calls[j.ID])
	}
}

func TestLastRungFailureIsTheAttemptsClass(t *testing.T) {
	l := setupLadder(t, fail(job.RateLimited, model.Usage{InputTokens: 1}), fail(job.Overloaded, model.Usage{InputTokens: 1}), nil)
	j := l.create("k1", nil)
	if r := l.deliver(body(j.ID)); len(r.BatchItemFailures) != 1 {
		t.Fatalf("a retryable attempt keeps its message: %v", failedIDs(r))
	}
	got := l.get(j.ID)
	if got.State != job.Queued || got.ErrorClass != job.Overloaded || got.Cost != 1+10 || got.Attempts != 1 {
		t.Fatalf("job = %+v", got)
	}
}

func TestARungsOwnTimeoutFallsBack(t *testing.T) {
	var rung0Took atomic.Int64
	hang := func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		start := time.Now()
		<-ctx.Done()
		rung0Took.Store(int64(time.Since(start)))
		return model.Response{}, &model.Error{Class: job.Timeout, Usage: model.Usage{InputTokens: 2}, Err: ctx.Err()}
	}
	l := setupLadder(t, hang, answer("m2", model.Usage{InputTokens: 1}), func(r *job.Route) { r.Rungs[0].Timeout = 80 * time.Millisecond })
	j := l.create("k1", nil)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 2+10 || got.ResultModel != "q/m2" {
		t.Fatalf("job = %+v", got)
	}
	if d := time.Duration(rung0Took.Load()); d < 70*time.Millisecond || d > time.Second {
		t.Fatalf("rung 0 ran %s, want its own 80ms timeout", d)
	}
}

func TestNoFallbackTheBudgetCannotCover(t *testing.T) {
	// Rung 1's worst case: (3+8 prompt + 10 output tokens) at 10/20 =
	// 110 + 200 = 310 nanocents; rung 0 already spent 5 of a 300 budget.
	l := setupLadder(t, fail(job.RateLimited, model.Usage{InputTokens: 5}), answer("m2", model.Usage{}), nil)
	j := l.create("k1", func(j *job.Job) { j.Budget = 300 })
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if l.second.calls[j.ID] != 0 {
		t.Fatalf("rung 1 was called though its worst case does not fit: %+v", got)
	}
	if got.ErrorClass != job.RateLimited || got.Cost != 5 || got.State != job.Queued {
		t.Fatalf("job = %+v, want released with rung 0's class", got)
	}
}

func TestARungCapsMaxTokensAndProgress(t *testing.T) {
	var asked atomic.Int64
	saw := make(chan float64, 1)
	var l *ladder
	slow := func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		asked.Store(int64(r.MaxTokens))
		r.Progress(2) // of a cap of 4
		// Wait for a heartbeat to write it (a few intervals; more on a
		// loaded machine).
		var cur job.Job
		for range 50 {
			time.Sleep(timing.Heartbeat)
			if cur, _ = l.store.Get(ctx, r.JobID); cur.Progress != 0 {
				break
			}
		}
		saw <- cur.Progress
		return model.Response{Output: "ok", Usage: model.Usage{OutputTokens: 4}}, nil
	}
	l = setupLadder(t, fail(job.Overloaded, model.Usage{}), slow, func(r *job.Route) { r.Rungs[1].MaxTokens = 4 })
	j := l.create("k1", nil) // max_tokens 10
	l.deliver(body(j.ID))
	if asked.Load() != 4 {
		t.Fatalf("rung 1 was asked for %d tokens, want its cap 4", asked.Load())
	}
	if p := <-saw; p != 0.5 {
		t.Fatalf("progress written by the heartbeat = %v, want 2/4", p)
	}
}

func TestTheLeaseCoversEveryRung(t *testing.T) {
	// Each rung may take 150ms; the margin is 100ms. An attempt that needs
	// both must keep its lease past 150+100ms: the lease covers 300+100.
	hang := func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		<-ctx.Done()
		return model.Response{}, &model.Error{Class: job.Timeout, Err: ctx.Err()}
	}
	live := make(chan bool, 1)
	var l *ladder
	late := func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		time.Sleep(140 * time.Millisecond) // ~290ms into the attempt
		cur, _ := l.store.Get(ctx, r.JobID)
		live <- cur.LeaseLive(time.Now())
		return model.Response{Output: "ok"}, nil
	}
	l = setupLadder(t, hang, late, func(r *job.Route) {
		r.Rungs[0].Timeout, r.Rungs[1].Timeout = 150*time.Millisecond, 150*time.Millisecond
	})
	j := l.create("k1", nil)
	l.deliver(body(j.ID))
	select {
	case ok := <-live:
		if !ok {
			t.Fatal("the lease ran out during the second rung")
		}
	default:
		t.Fatalf("the second rung was never called: %+v", l.get(j.ID))
	}
	if got := l.get(j.ID); got.State != job.Succeeded {
		t.Fatalf("job = %+v", got)
	}
}

func TestClaimHoldsTheReserveUntilTheAttemptSettles(t *testing.T) {
	held := make(chan job.Nanocents, 1)
	var f *fixture
	f = setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		cur, _ := f.store.Get(ctx, r.JobID)
		held <- cur.Held
		return model.Response{Output: "ok", Usage: model.Usage{InputTokens: 9}}, nil
	})
	j := f.create("k1", func(j *job.Job) { j.Reserve = 31 })
	f.deliver(body(j.ID))
	if h := <-held; h != 31 {
		t.Fatalf("held during the call: %d, want the reserve 31", h)
	}
	if got := f.get(j.ID); got.Held != 0 || got.Cost != 9 || got.State != job.Succeeded {
		t.Fatalf("after settling: %+v", got)
	}
}

func TestAReserveTheBudgetCannotCoverIsNeverClaimed(t *testing.T) {
	f := setup(t, ok(1))
	j := f.create("k1", func(j *job.Job) { j.Budget, j.Reserve = 30, 31 })
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.BudgetExhausted || got.Attempts != 0 || f.prov.calls[j.ID] != 0 {
		t.Fatalf("job = %+v: the claim itself must refuse, spending no attempt", got)
	}
}

func TestCancelDuringAFallbackStopsTheClimb(t *testing.T) {
	var f *ladder
	cancelling := func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		_, _ = f.store.Cancel(context.Background(), job.Cancel{ID: r.JobID, Tenant: "t1", Now: time.Now()})
		<-ctx.Done() // the next heartbeat sees the cancel
		return model.Response{}, &model.Error{Class: job.Overloaded, Usage: model.Usage{InputTokens: 3}, Err: ctx.Err()}
	}
	f = setupLadder(t, cancelling, answer("m2", model.Usage{}), nil)
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.Cancelled || got.Cost != 3 || f.second.calls[j.ID] != 0 {
		t.Fatalf("job = %+v, rung 1 calls %d", got, f.second.calls[j.ID])
	}
}

// TestAFallbackRungIsHeldForBeforeItIsCalled: the claim holds the first
// rung's worst case; before a fallback rung the attempt raises its hold to
// what it spent plus that rung's worst case, so a worker that dies during
// the rung leaves a hold that covers what the providers may bill (the
// chaos run found the first rung's hold alone below the bill). The finish
// returns all of it.
func TestAFallbackRungIsHeldForBeforeItIsCalled(t *testing.T) {
	var l *ladder
	during := make(chan job.Job, 1)
	l = setupLadder(t, fail(job.Overloaded, model.Usage{InputTokens: 5}), func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		cur, _ := l.store.Get(ctx, r.JobID)
		during <- cur
		return answer("m2", model.Usage{InputTokens: 7})(ctx, r, n)
	}, nil)
	// Rung 0's worst case (3+8 prompt + 10 output tokens at 1/2) is 31;
	// rung 1's is 310 (see TestNoFallbackTheBudgetCannotCover).
	j := l.create("k1", func(j *job.Job) { j.Reserve, j.Budget = 31, 1000 })
	l.deliver(body(j.ID))
	cur := <-during
	if cur.Held != 5+310 {
		t.Fatalf("while rung 1 runs the record holds %d, want what rung 0 spent (5) plus rung 1's worst case (310)", cur.Held)
	}
	if got := l.get(j.ID); got.State != job.Succeeded || got.Held != 0 || got.Cost != 5+70 {
		t.Fatalf("job = %+v: want succeeded, the whole hold returned, cost 75", got)
	}
}

// landingHolds is a store whose HoldMore lands and is answered as failed:
// a raise whose answer was lost.
type landingHolds struct{ *memstore.Store }

func (s landingHolds) HoldMore(ctx context.Context, h job.HoldMore) (job.Job, error) {
	if _, err := s.Store.HoldMore(ctx, h); err != nil {
		return job.Job{}, err
	}
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

// TestARaiseWhoseAnswerWasLostIsReturnedAtTheEnd: the raise for the
// fallback rung lands but the worker is told it failed, so it does not
// call that rung; its settlement still returns the whole hold the record
// has for it (found by a read), and the job holds nothing once it is
// released (found by the harsh chaos profile: a succeeded job still
// holding a raise).
func TestARaiseWhoseAnswerWasLostIsReturnedAtTheEnd(t *testing.T) {
	l := setupLadder(t, fail(job.Overloaded, model.Usage{InputTokens: 5}), answer("m2", model.Usage{InputTokens: 7}), nil)
	j := l.create("k1", func(j *job.Job) { j.Reserve, j.Budget = 31, 1000 })
	l.w = l.newWorker(landingHolds{l.store}, func(c *worker.Config) {
		c.Routes = map[string]job.Route{"default": {Rungs: []job.Rung{
			{Provider: "p", Model: "m1", Price: l.price, Timeout: 2 * time.Second},
			{Provider: "q", Model: "m2", Price: l.dear, Timeout: 2 * time.Second},
		}, FallbackOn: l.fallback}}
		c.Providers = map[string]model.Provider{"p": l.prov, "q": l.second}
	})
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Queued || got.Held != 0 || got.Cost != 5 || l.second.generations(j.ID) != 0 {
		t.Fatalf("job = %+v, rung 1 generations %d: want released at rung 0's cost, nothing held, rung 1 never called", got, l.second.generations(j.ID))
	}
}
