package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
)

// refusingFinishes is a store whose finishing writes (succeed, release,
// end) fail as if DynamoDB were unavailable while down is set; claims,
// heartbeats and reads work.
type refusingFinishes struct {
	*memstore.Store
	down  *atomic.Bool
	tries *atomic.Int32
}

func (s refusingFinishes) refused() bool {
	s.tries.Add(1)
	return s.down.Load()
}

func (s refusingFinishes) Succeed(ctx context.Context, t job.Succeed) (job.Job, error) {
	if s.refused() {
		return job.Job{}, &job.Error{Code: job.CodeUnavailable}
	}
	return s.Store.Succeed(ctx, t)
}

func (s refusingFinishes) Release(ctx context.Context, t job.Release) (job.Job, error) {
	if s.refused() {
		return job.Job{}, &job.Error{Code: job.CodeUnavailable}
	}
	return s.Store.Release(ctx, t)
}

func (s refusingFinishes) End(ctx context.Context, t job.End) (job.Job, error) {
	if s.refused() {
		return job.Job{}, &job.Error{Code: job.CodeUnavailable}
	}
	return s.Store.End(ctx, t)
}

// TestAnAnswerOutlivesAStoreOutage: the write that records a paid answer
// fails for longer than a fixed retry budget (eight lease TTLs, 2.4 s); the worker
// keeps the answer, keeps the lease alive meanwhile (a duplicate delivery
// during the outage is absorbed, not generated again), and records it
// once the store answers.
func TestAnAnswerOutlivesAStoreOutage(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", func(j *job.Job) { j.Reserve = 100 })
	var down atomic.Bool
	var tries atomic.Int32
	down.Store(true)
	f.w = f.newWorker(refusingFinishes{f.store, &down, &tries})
	outage := 8 * timing.LeaseTTL

	done := make(chan int)
	go func() { done <- len(f.deliver(body(j.ID)).BatchItemFailures) }()
	for tries.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// A second worker gets the message while the first cannot write.
	dup := f.newWorker(f.store)
	time.Sleep(outage / 2)
	if _, err := dup.Handle(context.Background(), event(body(j.ID))); err != nil {
		t.Fatal(err)
	}
	mid := f.get(j.ID)
	time.Sleep(outage / 2)
	down.Store(false)
	if kept := <-done; kept != 0 {
		t.Fatalf("message kept: the answer was not recorded")
	}

	if g := f.prov.generations(j.ID); g != 1 {
		t.Fatalf("%d generations, want 1", g)
	}
	if mid.State != job.Running || !mid.LeaseUntil.After(mid.CreatedAt.Add(2*timing.LeaseTTL)) {
		t.Fatalf("during the outage: %+v, want the lease still renewed by the heartbeat", mid)
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 40 || got.CostEstimated || got.Held != 0 {
		t.Fatalf("job = %+v, want succeeded at exactly the call's cost", got)
	}
	if n := tries.Load(); n < 4 {
		t.Fatalf("%d tries of the finishing write, want it retried through the outage", n)
	}
}

// TestADeadAttemptIsWrittenOffBeforeTheNextClaim: a job whose worker died
// mid-attempt (running, its lease run out, its reserve still held) is
// written off by the next delivery: the hold becomes cost as an estimate,
// then the job is claimed and generated; no hold is left.
func TestADeadAttemptIsWrittenOffBeforeTheNextClaim(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", func(j *job.Job) {
		j.Reserve, j.Held = 100, 100
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "dead", job.Millis(time.Now().Add(-time.Second))
	})
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 2 || got.Cost != 140 || !got.CostEstimated || got.Held != 0 {
		t.Fatalf("job = %+v, want succeeded on attempt 2, cost 100 (the dead hold) + 40, estimated, nothing held", got)
	}
	if f.metrics.get("AttemptsWrittenOff") != 1 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("written off %v, generations %d", f.metrics.get("AttemptsWrittenOff"), f.prov.generations(j.ID))
	}
}

// TestADeadAttemptOnACancelledJobIsWrittenOff: cancelled while its
// attempt ran, then the worker died: the next delivery charges the hold
// and drops the message; nothing is generated.
func TestADeadAttemptOnACancelledJobIsWrittenOff(t *testing.T) {
	f := setup(t, ok(40))
	j := f.create("k1", func(j *job.Job) {
		j.Reserve, j.Held, j.ErrorClass = 100, 100, job.Cancelled
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Abandoned, 1, "dead", job.Millis(time.Now().Add(-time.Second))
	})
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.Cost != 100 || !got.CostEstimated || got.Held != 0 || got.LeaseOwner != "" {
		t.Fatalf("job = %+v, want abandoned with the dead hold charged", got)
	}
	if f.prov.generations(j.ID) != 0 {
		t.Fatal("a cancelled job was generated")
	}
}

// unavailable is a store that refuses everything.
type unavailable struct{ *memstore.Store }

func (unavailable) Claim(context.Context, job.Claim) (job.Job, error) {
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

func (unavailable) Get(context.Context, string) (job.Job, error) {
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

// TestAFailedMessageComesBackAfterABackoff: a message whose claim could
// not be written returns after a backoff by its receive count, not at the
// queue's visibility timeout (18 minutes by default).
func TestAFailedMessageComesBackAfterABackoff(t *testing.T) {
	f := setup(t, ok(1))
	j := f.create("k1", nil)
	f.w = f.newWorker(unavailable{f.store})
	ev := event(body(j.ID))
	ev.Records[0].Attributes = map[string]string{"ApproximateReceiveCount": "3"}
	r, err := f.w.Handle(context.Background(), ev)
	if err != nil || len(r.BatchItemFailures) != 1 {
		t.Fatalf("answer %+v %v, want the message kept", r, err)
	}
	// Backoff(3, 100ms, 1s, r=0): 400 ms, half of it fixed.
	if v := f.queue.last(); v.handle != "r0" || v.d != 200*time.Millisecond {
		t.Fatalf("visibility %+v, want r0 back in 200ms", v)
	}
}
