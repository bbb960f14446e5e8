package worker_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// groupQueue is the test queue noting the group (tenant) of each fresh
// message too.
type groupQueue struct {
	*queue
	mu     sync.Mutex
	groups []string
}

func (q *groupQueue) SendAfter(ctx context.Context, id, tenant string, d time.Duration) error {
	err := q.queue.SendAfter(ctx, id, tenant, d)
	if err == nil {
		q.mu.Lock()
		q.groups = append(q.groups, tenant)
		q.mu.Unlock()
	}
	return err
}

// The tenant wait a first deferral gets under the test timing and a zero
// jitter: the heartbeat or backoff base, whichever is longer (100 ms),
// halved by the equal jitter.
const firstTenantWait = 50 * time.Millisecond

// requeueing is the fixture's worker with waits longer than bound
// re-sent, its tenant t1 held to one job in flight and that one place
// taken, so every t1 job it claims is deferred.
func (f *fixture) requeueing(bound time.Duration) *groupQueue {
	slots := memstore.NewSlots()
	now := time.Now()
	if ok, err := slots.Enter(context.Background(), job.Slot{Tenant: "t1", JobID: "job_elsewhere", Now: now, Until: now.Add(time.Hour), Limit: 1}); !ok || err != nil {
		f.t.Fatalf("taking t1's only place: %v %v", ok, err)
	}
	q := &groupQueue{queue: f.queue}
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Queue = q
		c.Timing.RequeueAfter = bound
		c.Slots, c.InFlight = slots, func(string) int { return 1 }
	})
	return q
}

// A deferral longer than the bound leaves the in-flight count: a fresh
// message delayed by the whole wait, in the job's tenant's group, and the
// old one deleted (not reported as a batch item failure), never hidden.
func TestALongDeferralIsResentAndItsMessageDeleted(t *testing.T) {
	f := setup(t, ok(1))
	q := f.requeueing(10 * time.Millisecond)
	j := f.create("k1", nil)
	if kept := failedIDs(f.deliver(body(j.ID))); len(kept) != 0 {
		t.Fatalf("kept %v: the re-sent wait's old message must be deleted", kept)
	}
	got := f.get(j.ID)
	if got.State != job.Queued || got.Attempts != 0 || got.NotBefore.IsZero() {
		t.Fatalf("job %+v: want deferred, uncounted, with its not_before", got)
	}
	if len(q.sent) != 1 || q.sent[0] != (visibility{j.ID, firstTenantWait}) || len(q.groups) != 1 || q.groups[0] != "t1" {
		t.Fatalf("sent %v in groups %v: want one message for %s delayed %s in group t1", q.sent, q.groups, j.ID, firstTenantWait)
	}
	if n := q.singles(); n != 0 {
		t.Fatalf("%d ChangeVisibility calls: a re-sent wait hides nothing", n)
	}
	if f.metrics.get("MessagesRequeued") != 1 || f.metrics.get("JobsDeferred") != 1 {
		t.Fatalf("metrics %v: want one MessagesRequeued and one JobsDeferred", f.metrics.counts)
	}
}

// A wait up to the bound keeps today's single call: the message hidden
// for the wait and kept, nothing sent.
func TestAShortDeferralHidesItsMessage(t *testing.T) {
	f := setup(t, ok(1))
	q := f.requeueing(time.Second)
	j := f.create("k1", nil)
	if kept := failedIDs(f.deliver(body(j.ID))); len(kept) != 1 {
		t.Fatalf("kept %v: a short wait's message stays", kept)
	}
	if len(q.sent) != 0 || q.singles() != 1 || q.last() != (visibility{"r0", firstTenantWait}) {
		t.Fatalf("sent %v, last visibility %v: want the message hidden %s, nothing sent", q.sent, q.last(), firstTenantWait)
	}
	if f.metrics.get("MessagesRequeued") != 0 {
		t.Fatalf("metrics %v", f.metrics.counts)
	}
}

// A re-send that fails must not lose the job: the old message is hidden
// for the wait, as before the bound, and kept.
func TestAFailedRequeueFallsBackToHiding(t *testing.T) {
	f := setup(t, ok(1))
	q := f.requeueing(10 * time.Millisecond)
	q.failSends = true
	j := f.create("k1", nil)
	if kept := failedIDs(f.deliver(body(j.ID))); len(kept) != 1 {
		t.Fatalf("kept %v: the message whose re-send failed must stay", kept)
	}
	if q.last() != (visibility{"r0", firstTenantWait}) || f.metrics.get("MessagesRequeued") != 0 {
		t.Fatalf("last visibility %v, metrics %v: want the message hidden %s, nothing counted as re-sent", q.last(), f.metrics.counts, firstTenantWait)
	}
	if got := f.get(j.ID); got.State != job.Queued || got.NotBefore.IsZero() {
		t.Fatalf("job %+v: want still deferred", got)
	}
}

// A retry's backoff longer than the bound is re-sent too, delayed by the
// backoff the release recorded.
func TestALongBackoffIsResentAndItsMessageDeleted(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.Overloaded, Usage: model.Usage{InputTokens: 2}}
	})
	q := &groupQueue{queue: f.queue}
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Queue, c.Timing.RequeueAfter = q, 10*time.Millisecond })
	j := f.create("k1", nil)
	if kept := failedIDs(f.deliver(body(j.ID))); len(kept) != 0 {
		t.Fatalf("kept %v: the re-sent backoff's old message must be deleted", kept)
	}
	got := f.get(j.ID)
	// Backoff(1, 100 ms, 1 s, jitter 0): 50 ms.
	if got.State != job.Queued || got.Attempts != 1 || len(q.sent) != 1 || q.sent[0] != (visibility{j.ID, 50 * time.Millisecond}) || q.groups[0] != "t1" {
		t.Fatalf("job %+v, sent %v in %v: want released for a retry and one message delayed by its 50 ms backoff", got, q.sent, q.groups)
	}
	// The attempt hid its message to its lease's end when it started; the
	// backoff itself hides nothing.
	for _, v := range q.visibility {
		if v.d == 50*time.Millisecond {
			t.Fatalf("the message was hidden for the backoff (%v): a re-sent wait hides nothing", q.visibility)
		}
	}
	if f.metrics.get("MessagesRequeued") != 1 || f.metrics.get("JobsRetried/overloaded") != 1 {
		t.Fatalf("metrics %v", f.metrics.counts)
	}
}

// A wait past SQS's longest delay is re-sent at that delay (15 minutes);
// the message arriving then finds the record still waiting (its claim
// refused) and is re-sent again for what is left, by the same rule.
func TestAWaitPastSQSsLongestDelayIsResentInSteps(t *testing.T) {
	f := setup(t, ok(1))
	q := &groupQueue{queue: f.queue}
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Queue, c.Timing.RequeueAfter = q, time.Second })
	j := f.create("k1", func(j *job.Job) { j.NotBefore = job.Millis(time.Now().Add(40 * time.Minute)) })
	if kept := failedIDs(f.deliver(body(j.ID))); len(kept) != 0 {
		t.Fatalf("kept %v: an early message of a long wait must be re-sent, not hidden", kept)
	}
	if len(q.sent) != 1 || q.sent[0] != (visibility{j.ID, 15 * time.Minute}) || q.groups[0] != "t1" || f.prov.generations(j.ID) != 0 {
		t.Fatalf("sent %v in %v, %d generations: want one message delayed 15 minutes and no call", q.sent, q.groups, f.prov.generations(j.ID))
	}
	if got := f.get(j.ID); got.State != job.Queued || !got.NotBefore.Equal(j.NotBefore) {
		t.Fatalf("job %+v: the record's wait must be untouched", got)
	}
}

// A message received three times or more, which SQS leaves out of
// ApproximateAgeOfOldestMessage, reports its age since it was sent; one
// received fewer times reports nothing.
func TestAMessageReceivedManyTimesReportsItsAge(t *testing.T) {
	f := setup(t, ok(1))
	j := f.create("k1", nil)
	sent := strconv.FormatInt(time.Now().Add(-90*time.Second).UnixMilli(), 10)
	for _, n := range []int{2, 3} {
		ev := received(body(j.ID), n)
		ev.Records[0].Attributes["SentTimestamp"] = sent
		f.handle(ev)
		age := f.metrics.get("ReceivedManyTimesAge")
		switch {
		case n < 3 && age != 0:
			t.Fatalf("received %d times: age %v reported, want none", n, age)
		case n >= 3 && (age < 90 || age > 120):
			t.Fatalf("received %d times: age %v, want about 90 s", n, age)
		}
	}
}
