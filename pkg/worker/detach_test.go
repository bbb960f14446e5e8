package worker_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// background is a scripted provider that keeps generations by id and
// runs them detached, as OpenAI's background mode under Request.Peek: a
// create tells its id and answers still running; a look answers still
// running until the generation has been looked at doneAfter times, then
// its 700-token answer. One cancelled before that answers cancelled,
// billed 300.
type background struct {
	creates, looks, aborts atomic.Int32
	doneAfter              int32
	waited                 atomic.Int32 // calls that were not peeks
	// onCreate, when set, runs as a create starts, before it tells its id.
	onCreate func()
	// stalls is how many looks stall until their context ends, then fail
	// billing nothing, as a read whose answer never came does.
	stalls atomic.Int32
	// unbilled makes every look answer a cancelled generation with no
	// usage stated.
	unbilled bool
	// hangWaits makes a call that waits for a generation (no peek) hang
	// until its context ends, billing nothing, as a resumed call does.
	hangWaits bool
}

func (b *background) Resumes() bool { return true }

func (b *background) Abandon(context.Context, string) { b.aborts.Add(1) }

func (b *background) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	if !r.Peek {
		b.waited.Add(1)
	}
	if r.Resume == "" {
		b.creates.Add(1)
		if b.onCreate != nil {
			b.onCreate()
		}
		r.Started("resp_1")
		return model.Response{}, model.ErrStillRunning
	}
	if (!r.Peek && b.hangWaits) || (r.Peek && b.stalls.Add(-1) >= 0) {
		<-ctx.Done()
		return model.Response{}, &model.Error{Class: job.Timeout, Detail: "transport", Err: ctx.Err()}
	}
	switch {
	case b.unbilled:
		return model.Response{}, &model.Error{Class: job.Cancelled, Detail: "cancelled, no usage"}
	case b.aborts.Load() > 0 && b.looks.Load() < b.doneAfter:
		return model.Response{}, &model.Error{Class: job.Cancelled, Detail: "cancelled", Usage: model.Usage{InputTokens: 300}}
	case b.looks.Add(1) <= b.doneAfter:
		return model.Response{}, model.ErrStillRunning
	}
	return model.Response{Output: "kept", Model: "m1", Usage: model.Usage{InputTokens: 700}}, nil
}

// detachedFixture is the fixture's worker on a detached rung of the
// background provider, on a clock the test moves.
func detachedFixture(t *testing.T, doneAfter int32) (*fixture, *background, *movedClock) {
	return detachedWithin(t, doneAfter, 10*time.Minute)
}

// detachedWithin is detachedFixture with the rung's timeout.
func detachedWithin(t *testing.T, doneAfter int32, timeout time.Duration) (*fixture, *background, *movedClock) {
	f := setup(t, nil)
	b := &background{doneAfter: doneAfter}
	clock := &movedClock{}
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Providers = map[string]model.Provider{"p": b}
		c.Routes = map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "p", Model: "m1", Price: f.price, Timeout: timeout, Detached: true}}}}
		c.Clock = clock
	})
	return f, b, clock
}

// sentSince is the fresh messages the queue was given after the first n.
func (f *fixture) sentSince(n int) []visibility {
	f.queue.mu.Lock()
	defer f.queue.mu.Unlock()
	return append([]visibility(nil), f.queue.sent[n:]...)
}

// A detached job's invocation ends as soon as its generation is started
// and recorded; each delayed message reattaches it without counting an
// attempt, and detaches it again while it runs, each wait longer; the
// answer is the one generation's, billed once at its exact cost.
func TestADetachedJobIsReattachedUntilItsOneGenerationEnds(t *testing.T) {
	f, b, clock := detachedFixture(t, 4)
	j := f.create("k1", func(j *job.Job) { j.Reserve = 1000 })
	var waits []time.Duration
	for round := range 6 {
		if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
			t.Fatalf("round %d kept %v, want the message deleted (a delayed one stands in)", round, failedIDs(r))
		}
		cur := f.get(j.ID)
		if cur.State == job.Succeeded {
			break
		}
		sent := f.sentSince(len(waits))
		if cur.State != job.Running || !cur.Detached() || len(sent) != 1 || sent[0].handle != j.ID {
			t.Fatalf("round %d: state %s, detached %v, fresh messages %v: want running, detached, one delayed message", round, cur.State, cur.Detached(), sent)
		}
		if cur.Attempts != 1 || cur.Held != 1000 || cur.Cost != 0 {
			t.Fatalf("round %d: attempts %d held %d cost %d, want 1 1000 0 while detached", round, cur.Attempts, cur.Held, cur.Cost)
		}
		waits = append(waits, sent[0].d)
		clock.add(sent[0].d)
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 1 || got.Cost != 700 || got.Held != 0 || got.LeaseOwner != "" {
		t.Fatalf("state %s attempts %d cost %d held %d lease %q: want succeeded, 1, 700, 0, none", got.State, got.Attempts, got.Cost, got.Held, got.LeaseOwner)
	}
	if b.creates.Load() != 1 || b.looks.Load() != 5 || b.waited.Load() != 0 {
		t.Fatalf("creates %d looks %d waiting calls %d: want 1 generation, 5 looks, no call that waits", b.creates.Load(), b.looks.Load(), b.waited.Load())
	}
	// Half the run so far, in whole seconds, at least one: 0, 1, 2, 3 and
	// 4 s into the run.
	if want := []time.Duration{time.Second, time.Second, time.Second, time.Second, 2 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v: growing with the generation's run", waits, want)
	}
	if f.metrics.get("JobsDetached") != 5 || f.metrics.get("JobsReattached") != 5 {
		t.Fatalf("JobsDetached %v JobsReattached %v, want 5 5", f.metrics.get("JobsDetached"), f.metrics.get("JobsReattached"))
	}
}

// Two deliveries of the same reattach message: one reattaches, the other
// loses its Reattach and goes; the generation is looked at once.
func TestADuplicateReattachMessageLosesToTheFirst(t *testing.T) {
	f, b, clock := detachedFixture(t, 0)
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	if !f.get(j.ID).Detached() {
		t.Fatal("the job did not detach")
	}
	clock.add(f.sentSince(0)[0].d)
	r := f.deliver(body(j.ID), body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 1 || got.Cost != 700 {
		t.Fatalf("state %s attempts %d cost %d: want succeeded, 1, 700", got.State, got.Attempts, got.Cost)
	}
	if b.creates.Load() != 1 || b.looks.Load() != 1 {
		t.Fatalf("creates %d looks %d: want 1 and 1 (the duplicate never looked)", b.creates.Load(), b.looks.Load())
	}
	// The duplicate is absorbed at once, or, when it read the record while
	// the first held it, waits out that lease like any duplicate of a
	// held job and is absorbed when it comes back.
	if len(r.BatchItemFailures) == 1 {
		clock.add(time.Minute)
		if again := f.deliver(body(j.ID)); len(again.BatchItemFailures) != 0 {
			t.Fatalf("the duplicate kept again after the lease: %v", failedIDs(again))
		}
	}
	if len(r.BatchItemFailures) > 1 || f.metrics.get("DuplicatesAbsorbed") < 1 {
		t.Fatalf("kept %v, DuplicatesAbsorbed %v: want the duplicate absorbed", failedIDs(r), f.metrics.get("DuplicatesAbsorbed"))
	}
	if b.creates.Load() != 1 || b.looks.Load() != 1 || f.get(j.ID).Cost != 700 {
		t.Fatalf("creates %d looks %d cost %d after the duplicate: want 1, 1, 700", b.creates.Load(), b.looks.Load(), f.get(j.ID).Cost)
	}
}

// A job cancelled while detached: its reattach stops the generation at the
// provider and settles what it made; nothing is generated again.
func TestACancelWhileDetachedStopsTheGeneration(t *testing.T) {
	f, b, clock := detachedFixture(t, 5)
	j := f.create("k1", func(j *job.Job) { j.Reserve = 1000 })
	f.deliver(body(j.ID))
	if _, err := f.store.Cancel(context.Background(), job.Cancel{ID: j.ID, Tenant: "t1", Now: clock.Now(), ExpiresAt: clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	clock.add(f.sentSince(0)[0].d)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept %v, want the message gone", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.Cancelled || got.Cost != 300 || got.Held != 0 || got.LeaseOwner != "" {
		t.Fatalf("state %s class %s cost %d held %d lease %q: want abandoned, cancelled, 300 (what the cancelled generation made), 0, none",
			got.State, got.ErrorClass, got.Cost, got.Held, got.LeaseOwner)
	}
	if b.aborts.Load() != 1 || b.creates.Load() != 1 {
		t.Fatalf("cancels sent %d, generations %d: want 1 and 1", b.aborts.Load(), b.creates.Load())
	}
}

// A message that comes back before the reattach is due waits for it,
// hidden: it neither reattaches early nor counts an attempt.
func TestAnEarlyReattachMessageWaitsForItsDueTime(t *testing.T) {
	f, b, _ := detachedFixture(t, 0)
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 1 {
		t.Fatalf("kept %v, want the early message kept, hidden", failedIDs(r))
	}
	if b.looks.Load() != 0 || f.get(j.ID).Attempts != 1 || !f.get(j.ID).Detached() {
		t.Fatalf("looks %d, record %+v: want no look, still detached", b.looks.Load(), f.get(j.ID))
	}
}

// A worker that died between starting a detached generation and its
// Detach left the generation on the record (Await comes first) under a
// lease that runs out: it is written off, and the next attempt resumes
// the generation rather than making another.
func TestADetachedGenerationWhoseWorkerDiedBeforeDetachingIsResumed(t *testing.T) {
	f, b, _ := detachedFixture(t, 0)
	j := f.create("k1", deadAttempt)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept %v, want the job finished", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 705 || got.Held != 0 || b.creates.Load() != 0 {
		t.Fatalf("state %s cost %d held %d generations %d: want succeeded, 705 (5 + the resumed 700), 0, none made again",
			got.State, got.Cost, got.Held, b.creates.Load())
	}
}

// deliverUntilDone delivers j's message, moving the clock by each delay
// the worker asks for, until j is finished (at most rounds deliveries).
func (f *fixture) deliverUntilDone(j job.Job, clock *movedClock, rounds int) job.Job {
	f.t.Helper()
	for range rounds {
		sent := len(f.sentSince(0))
		f.deliver(body(j.ID))
		if got := f.get(j.ID); got.State.Terminal() {
			return got
		}
		if fresh := f.sentSince(sent); len(fresh) > 0 {
			clock.add(fresh[len(fresh)-1].d)
		} else {
			clock.add(2 * time.Second) // past a retry's backoff
		}
	}
	f.t.Fatalf("job not finished after %d deliveries: %+v", rounds, f.get(j.ID))
	return job.Job{}
}

// A look whose read stalls past its time (the provider's answer never
// came) is a read that may pass, not the generation's end: the job is
// detached again and the next look reads it, one generation at its exact
// cost. Failing the attempt instead left the generation running, billed
// by the provider, and off the record, while a retry paid for another.
func TestALookThatStallsDetachesAgain(t *testing.T) {
	f, b, clock := detachedFixture(t, 0)
	b.stalls.Store(1)
	j := f.create("k1", func(j *job.Job) { j.Reserve = 1000 })
	got := f.deliverUntilDone(j, clock, 5)
	if got.State != job.Succeeded || got.Attempts != 1 || got.Cost != 700 || got.CostEstimated || got.Held != 0 {
		t.Fatalf("state %s attempts %d cost %d estimated %v held %d: want succeeded, 1, 700, exact, 0",
			got.State, got.Attempts, got.Cost, got.CostEstimated, got.Held)
	}
	if b.creates.Load() != 1 || f.metrics.get("JobsDetached") != 2 {
		t.Fatalf("generations %d, JobsDetached %v: want 1 generation, detached twice", b.creates.Load(), f.metrics.get("JobsDetached"))
	}
}

// A look answered with an end that states no usage (here a generation
// cancelled behind the worker's back, unread) cannot tell what the
// generation cost: the attempt is charged its worst case, estimated, and
// the generation stopped, never recorded as free.
func TestALookWhoseEndStatesNoUsageChargesTheWorstCase(t *testing.T) {
	f, b, clock := detachedFixture(t, 0)
	b.unbilled = true
	j := f.create("k1", func(j *job.Job) { j.Reserve = 1000; j.MaxAttempts = 1 })
	f.deliver(body(j.ID))
	clock.add(f.sentSince(0)[0].d)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if want := worstCase(f, j); !got.State.Terminal() || got.Cost != want || !got.CostEstimated || got.Held != 0 {
		t.Fatalf("state %s cost %d estimated %v held %d: want finished, %d (the worst case), estimated, 0",
			got.State, got.Cost, got.CostEstimated, got.Held, want)
	}
	if b.aborts.Load() != 1 || b.creates.Load() != 1 {
		t.Fatalf("cancels sent %d, generations %d: want 1 and 1", b.aborts.Load(), b.creates.Load())
	}
}

// worstCase is what the fixture's detached rung charges j's generation
// when nothing says what it made: the rung's worst case.
func worstCase(f *fixture, j job.Job) job.Nanocents {
	var in job.Input
	if err := json.Unmarshal(j.Input, &in); err != nil {
		f.t.Fatal(err)
	}
	return job.Rung{Price: f.price}.WorstCase(in)
}

// A detached generation whose id did not reach the record (the job was
// cancelled as it started, so Await was refused) is waited for in place.
// That wait, cut off when the lease is lost, bills nothing of its own, yet
// the attempt made the generation and the provider bills it: the record
// charges its worst case, estimated, and the generation is stopped.
func TestAGenerationWaitedForInPlaceIsChargedWhenTheWaitIsCutOff(t *testing.T) {
	f, b, clock := detachedFixture(t, 0)
	b.hangWaits = true
	j := f.create("k1", func(j *job.Job) { j.Reserve = 1000 })
	b.onCreate = func() {
		if _, err := f.store.Cancel(context.Background(), job.Cancel{ID: j.ID, Tenant: "t1", Now: clock.Now(), ExpiresAt: clock.Now().Add(time.Hour)}); err != nil {
			t.Error(err)
		}
	}
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if want := worstCase(f, j); got.State != job.Abandoned || got.Cost != want || !got.CostEstimated || got.Held != 0 {
		t.Fatalf("state %s cost %d estimated %v held %d: want abandoned, %d (the worst case), estimated, 0",
			got.State, got.Cost, got.CostEstimated, got.Held, want)
	}
	if b.waited.Load() != 1 || b.aborts.Load() != 1 {
		t.Fatalf("waiting calls %d, cancels sent %d: want 1 and 1", b.waited.Load(), b.aborts.Load())
	}
}

// A generation that has outrun its rung's timeout when its look stalls is
// stopped, and the read the stop makes finds it ended with its answer:
// that answer is the attempt's (one generation, at its exact cost), not
// a timeout whose retry generates, and pays, again.
func TestAGenerationThatEndedBeforeItsStopIsTheAnswer(t *testing.T) {
	f, b, clock := detachedWithin(t, 0, 5*time.Second)
	j := f.create("k1", func(j *job.Job) { j.Reserve = 1000 })
	f.deliver(body(j.ID))
	b.stalls.Store(1)
	clock.add(10 * time.Second) // a late reattach: the rung's timeout has passed
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 1 || got.Cost != 700 || got.CostEstimated || got.Held != 0 {
		t.Fatalf("state %s attempts %d cost %d estimated %v held %d: want succeeded, 1, 700, exact, 0",
			got.State, got.Attempts, got.Cost, got.CostEstimated, got.Held)
	}
	if b.creates.Load() != 1 || b.aborts.Load() != 1 {
		t.Fatalf("generations %d, cancels sent %d: want 1 and 1", b.creates.Load(), b.aborts.Load())
	}
}
