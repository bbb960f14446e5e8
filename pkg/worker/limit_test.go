package worker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// limit is the queue's maxReceiveCount in these tests.
const limit = 5

// received is the batch of one message received n times.
func received(body string, n int) events.SQSEvent {
	ev := event(body)
	ev.Records[0].Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(n)}
	return ev
}

func (f *fixture) limited(store worker.Store) {
	f.w = f.newWorker(store, func(c *worker.Config) { c.ReceiveLimit = limit })
}

func (f *fixture) handle(ev events.SQSEvent) []string {
	resp, err := f.w.Handle(context.Background(), ev)
	if err != nil {
		f.t.Fatal(err)
	}
	return failedIDs(resp)
}

// unavailableClaims is a store whose claims always fail: nothing can say
// whether the job is alive.
type unavailableClaims struct{ *memstore.Store }

func (unavailableClaims) Claim(context.Context, job.Claim) (job.Job, error) {
	return job.Job{}, &job.Error{Code: job.CodeUnavailable}
}

func TestAMessageInTroubleAtItsReceiveLimitIsDeadLetteredByTheWorker(t *testing.T) {
	f := setup(t, ok(1))
	j := f.create("k1", nil)
	f.limited(unavailableClaims{f.store})
	// Below the limit the message simply goes back.
	if kept := f.handle(received(body(j.ID), limit-2)); len(kept) != 1 || len(f.queue.dead) != 0 {
		t.Fatalf("below the limit: kept %v, dead %v", kept, f.queue.dead)
	}
	// At limit-1 the worker sends it to the DLQ itself (a counted send the
	// DLQ alarm sees) instead of letting redrive take it silently, and
	// marks the job, which nobody holds.
	if kept := f.handle(received(body(j.ID), limit-1)); len(kept) != 0 {
		t.Fatalf("at the limit the message was kept: %v", kept)
	}
	if len(f.queue.dead) != 1 || !strings.HasPrefix(f.queue.dead[0], "receive_limit:") {
		t.Fatalf("dead letters %v, want one with reason receive_limit", f.queue.dead)
	}
	if got := f.get(j.ID); got.State != job.Failed || got.ErrorClass != job.DeadLettered || got.ExpiresAt.IsZero() {
		t.Fatalf("job = %+v: want failed, dead_lettered", got)
	}
	if f.prov.generations(j.ID) != 0 || f.metrics.get("MessagesDeadLettered") != 1 || f.metrics.get("JobsFailed/dead_lettered") != 1 {
		t.Fatalf("generations %d, metrics %v", f.prov.generations(j.ID), f.metrics.counts)
	}
}

func TestARetryAtItsReceiveLimitGetsAFreshMessage(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.RateLimited, Usage: model.Usage{InputTokens: 2}}
	})
	j := f.create("k1", nil)
	f.limited(f.store)
	if kept := f.handle(received(body(j.ID), limit-1)); len(kept) != 0 {
		t.Fatalf("the old message was kept: %v", kept)
	}
	got := f.get(j.ID)
	if got.State != job.Queued || len(f.queue.dead) != 0 || len(f.queue.sent) != 1 {
		t.Fatalf("job %+v, dead %v, sent %v: want released and one fresh message, nothing dead-lettered", got, f.queue.dead, f.queue.sent)
	}
	// The fresh message waits out the backoff the release set.
	if s := f.queue.sent[0]; s.handle != j.ID || s.d <= 0 || s.d > time.Until(got.NotBefore)+50*time.Millisecond {
		t.Fatalf("fresh message %+v, want delayed until the backoff ends at %s", s, got.NotBefore)
	}
}

func TestADuplicateFacingALiveLeaseAtItsReceiveLimitGetsAFreshMessage(t *testing.T) {
	f := setup(t, ok(1))
	j := f.create("k1", nil)
	now := time.Now()
	if _, err := f.store.Claim(context.Background(), job.Claim{ID: j.ID, Owner: "other", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	f.limited(f.store)
	if kept := f.handle(received(body(j.ID), limit-1)); len(kept) != 0 {
		t.Fatalf("the old message was kept: %v", kept)
	}
	if len(f.queue.sent) != 1 || f.queue.sent[0].d < 50*time.Second || len(f.queue.dead) != 0 {
		t.Fatalf("sent %v dead %v: want a fresh message delayed to the other worker's lease end", f.queue.sent, f.queue.dead)
	}
	if f.metrics.get("MessagesRenewed") != 1 {
		t.Fatalf("metrics %v", f.metrics.counts)
	}
	if got := f.get(j.ID); got.State != job.Running || got.LeaseOwner != "other" {
		t.Fatalf("the held job was touched: %+v", got)
	}
}

func TestAFailedHandOffLeavesTheMessageForItsLastReceive(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.RateLimited}
	})
	j := f.create("k1", nil)
	f.limited(f.store)
	f.queue.failSends = true
	if kept := f.handle(received(body(j.ID), limit-1)); len(kept) != 1 {
		t.Fatalf("kept %v: a message whose renewal failed must go back", kept)
	}
}

func TestAPanicAtItsReceiveLimitIsDeadLettered(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) { panic("provider bug") })
	j := f.create("k1", nil)
	f.limited(f.store)
	if kept := f.handle(received(body(j.ID), limit)); len(kept) != 0 || len(f.queue.dead) != 1 {
		t.Fatalf("kept %v, dead %v: want the panicking message dead-lettered", kept, f.queue.dead)
	}
}
