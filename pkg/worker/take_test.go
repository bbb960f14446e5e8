package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// lastOf is the last visibility change of the message with handle h.
func (q *queue) lastOf(h string) visibility {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := len(q.visibility) - 1; i >= 0; i-- {
		if q.visibility[i].handle == h {
			return q.visibility[i]
		}
	}
	return visibility{}
}

// rateLimited is the fixture's worker with its one rung's provider limited to
// l, taking from buckets.
func (f *fixture) rateLimited(l job.RateLimit, buckets *memstore.Buckets) {
	routes := f.routes()
	r := routes["default"]
	r.Rungs[0].Limit = l
	routes["default"] = r
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Routes, c.Buckets = routes, buckets })
}

// TestAnEmptyBucketDefersTheJobUncounted: with a key allowed 6 calls a
// minute, of two jobs delivered together one is called and the other is
// handed back before any call: queued, its attempt uncounted, nothing
// held or spent, its backoff and its message's visibility the bucket's
// 10 s refill.
func TestAnEmptyBucketDefersTheJobUncounted(t *testing.T) {
	f := setup(t, ok(100))
	f.rateLimited(job.RateLimit{RequestsPerMinute: 6}, memstore.NewBuckets())
	a, b := f.create("k1", nil), f.create("k2", nil)
	start := time.Now()
	resp := f.deliver(body(a.ID), body(b.ID))
	ran, deferred, handle := f.get(a.ID), f.get(b.ID), "r1"
	if ran.State == job.Queued {
		ran, deferred, handle = deferred, ran, "r0"
	}
	if ran.State != job.Succeeded || ran.Attempts != 1 {
		t.Fatalf("the job the bucket let through: %+v", ran)
	}
	if deferred.State != job.Queued || deferred.Attempts != 0 || deferred.Held != 0 || deferred.Cost != 0 || deferred.ErrorClass != job.RateLimited {
		t.Fatalf("the deferred job: %+v", deferred)
	}
	if w := deferred.NotBefore.Sub(start); w < 9*time.Second || w > 11*time.Second {
		t.Fatalf("deferred for %s, want the bucket's 10s", w)
	}
	if n := f.prov.calls[a.ID] + f.prov.calls[b.ID]; n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	if len(resp.BatchItemFailures) != 1 || f.metrics.get("JobsDeferred") != 1 {
		t.Fatalf("kept %v, deferred %v", resp.BatchItemFailures, f.metrics.get("JobsDeferred"))
	}
	if v := f.queue.lastOf(handle); v.d < 9*time.Second || v.d > 11*time.Second {
		t.Fatalf("the deferred message is hidden for %s", v.d)
	}
}

// TestA429OnALimitedKeyIsAWaitNotAFailure: a provider's 429 with a
// retry-after on a key with a shared bucket pauses the bucket for every
// worker and hands the job back uncounted for that long; the next job
// finds the bucket paused and is deferred without a call. On a key
// without a bucket (a worker without buckets, or the local fake without
// declared limits) a 429 is a failed attempt, as before.
func TestA429OnALimitedKeyIsAWaitNotAFailure(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.RateLimited, Detail: "http 429", Pause: 5 * time.Second}
	})
	buckets := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{RequestsPerMinute: 6000}, buckets)
	a := f.create("k1", nil)
	start := time.Now()
	f.deliver(body(a.ID))
	got := f.get(a.ID)
	if got.State != job.Queued || got.Attempts != 0 || got.Held != 0 || got.ErrorClass != job.RateLimited {
		t.Fatalf("after a 429: %+v", got)
	}
	if w := got.NotBefore.Sub(start); w < 5*time.Second || w > 6*time.Second {
		t.Fatalf("deferred for %s, want the retry-after's 5s", w)
	}
	if bk, _ := buckets.Bucket(t.Context(), "p"); bk.Requests.Before(start.Add(5 * time.Second)) {
		t.Fatalf("the bucket was not paused: %+v", bk)
	}
	b := f.create("k2", nil)
	f.deliver(body(b.ID))
	if got := f.get(b.ID); got.State != job.Queued || got.Attempts != 0 || f.prov.calls[b.ID] != 0 {
		t.Fatalf("a job during the pause: %+v, %d calls", got, f.prov.calls[b.ID])
	}

	c := f.create("k3", nil)
	f.w = f.newWorker(f.store) // no limits
	f.deliver(body(c.ID))
	if got := f.get(c.ID); got.State != job.Queued || got.Attempts != 1 {
		t.Fatalf("a 429 on an unlimited key: %+v", got)
	}
}

// TestACallGivesBackWhatItsTakeOverTook: a take takes the rung's worst
// case (the prompt's ceiling and the output cap: 21 tokens here); the
// call used 5, and the 16 left come back, so the tokens' time has moved
// by 5 ms at 60,000 tokens a minute.
func TestACallGivesBackWhatItsTakeOverTook(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	})
	buckets := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{TokensPerMinute: 60_000}, buckets)
	a := f.create("k1", nil)
	before := time.Now()
	f.deliver(body(a.ID))
	after := time.Now()
	bk, _ := buckets.Bucket(t.Context(), "p")
	if bk.Tokens.Before(before.Add(5*time.Millisecond)) || bk.Tokens.After(after.Add(5*time.Millisecond)) {
		t.Fatalf("tokens' time %s after the start, want 5ms after the take", bk.Tokens.Sub(before))
	}
}

// TestAnAnswerSayingNothingIsLeftLowersTheBucket: an answer whose headers
// say no request is left of the key's limit moves the bucket to where no
// take fits for a burst's length, for every worker; one that says plenty
// is left changes nothing.
func TestAnAnswerSayingNothingIsLeftLowersTheBucket(t *testing.T) {
	left := model.Left{Requests: 0, HasRequests: true}
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3}, Left: left}, nil
	})
	buckets := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{RequestsPerMinute: 6000}, buckets)
	before := time.Now()
	f.deliver(body(f.create("k1", nil).ID))
	if bk, _ := buckets.Bucket(t.Context(), "p"); bk.Requests.Before(before.Add(job.Burst)) {
		t.Fatalf("requests' time %s after the start, want at least a burst", bk.Requests.Sub(before))
	}
	left = model.Left{Requests: 5000, HasRequests: true}
	other := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{RequestsPerMinute: 6000}, other)
	before = time.Now()
	f.deliver(body(f.create("k2", nil).ID))
	if bk, _ := other.Bucket(t.Context(), "p"); bk.Requests.After(time.Now().Add(10 * time.Millisecond)) {
		t.Fatalf("plenty left moved the bucket to %s after the start", bk.Requests.Sub(before))
	}
}

// TestAShortWaitForTheBucketIsWaitedInPlace: with a key allowed one call
// every 100 ms and a lease of 300 ms (so waits up to 150 ms are waited in
// place), two jobs delivered together both run in this invocation, the
// second after its wait and a renewal of its lease, and none is
// deferred.
func TestAShortWaitForTheBucketIsWaitedInPlace(t *testing.T) {
	f := setup(t, ok(100))
	f.rateLimited(job.RateLimit{RequestsPerMinute: 600}, memstore.NewBuckets())
	a, b := f.create("k1", nil), f.create("k2", nil)
	f.deliver(body(a.ID), body(b.ID))
	for _, id := range []string{a.ID, b.ID} {
		if got := f.get(id); got.State != job.Succeeded || got.Attempts != 1 {
			t.Fatalf("job %+v", got)
		}
	}
	if n := f.metrics.get("JobsDeferred"); n != 0 {
		t.Fatalf("%v jobs deferred", n)
	}
}

// TestA429OnAKeyWithoutDeclaredLimitsIsAWaitNotAFailure: every keyed
// entry has a bucket, limits declared or not (issue K): a 429 on an
// OpenAI key that declares none pauses its model's bucket for every
// worker and hands the job back uncounted, and leaves the bucket of the
// key's other model alone (OpenAI limits each model separately).
func TestA429OnAKeyWithoutDeclaredLimitsIsAWaitNotAFailure(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.RateLimited, Detail: "http 429", Pause: 5 * time.Second}
	})
	buckets := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{Grain: job.GrainModel}, buckets)
	a := f.create("k1", nil)
	start := time.Now()
	f.deliver(body(a.ID))
	got := f.get(a.ID)
	if got.State != job.Queued || got.Attempts != 0 || got.Held != 0 || got.ErrorClass != job.RateLimited {
		t.Fatalf("after a 429: %+v", got)
	}
	if w := got.NotBefore.Sub(start); w < 5*time.Second || w > 6*time.Second {
		t.Fatalf("deferred for %s, want the retry-after's 5s", w)
	}
	key := job.RateLimit{Grain: job.GrainModel}.Bucket("p", "m1")
	if bk, _ := buckets.Bucket(t.Context(), key); bk.Requests.Before(start.Add(5 * time.Second)) {
		t.Fatalf("the model's bucket was not paused: %+v", bk)
	}
	for _, other := range []string{"p", job.RateLimit{Grain: job.GrainModel}.Bucket("p", "m2")} {
		if bk, _ := buckets.Bucket(t.Context(), other); !bk.Requests.IsZero() {
			t.Fatalf("bucket %s was paused by another model's 429: %+v", other, bk)
		}
	}
	b := f.create("k2", nil)
	f.deliver(body(b.ID))
	if got := f.get(b.ID); got.State != job.Queued || got.Attempts != 0 || f.prov.calls[b.ID] != 0 {
		t.Fatalf("a job during the pause: %+v, %d calls", got, f.prov.calls[b.ID])
	}
}

// TestAnAnswersStatedLimitIsLearnedForEveryWorker: an answer whose
// headers state the key's limit records it on the bucket; the next
// job's take is priced at it (one call every 10 s), so of two jobs
// after it one runs and one is deferred, with no limit ever declared.
func TestAnAnswersStatedLimitIsLearnedForEveryWorker(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3},
			Left: model.Left{Requests: 5, HasRequests: true, Limit: job.RateLimit{RequestsPerMinute: 6}}}, nil
	})
	buckets := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{Grain: job.GrainEntry}, buckets)
	f.deliver(body(f.create("k1", nil).ID))
	if bk, _ := buckets.Bucket(t.Context(), "p"); bk.Learned != (job.RateLimit{RequestsPerMinute: 6}) {
		t.Fatalf("learned %+v, want 6 requests a minute", bk.Learned)
	}
	a, b := f.create("k2", nil), f.create("k3", nil)
	f.deliver(body(a.ID), body(b.ID))
	ran, deferred := f.get(a.ID), f.get(b.ID)
	if ran.State == job.Queued {
		ran, deferred = deferred, ran
	}
	if ran.State != job.Succeeded || deferred.State != job.Queued || deferred.Attempts != 0 || f.metrics.get("JobsDeferred") != 1 {
		t.Fatalf("at the learned limit: ran %+v, deferred %+v", ran, deferred)
	}
}

// TestABedrockKeyLearnsItsLimitFromItsThrottles: a key whose answers
// state no limits (Throttles) is cut to job.ThrottledStart by its first
// throttle, which defers the job uncounted, and grows by one an answer.
func TestABedrockKeyLearnsItsLimitFromItsThrottles(t *testing.T) {
	throttle := true
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		if throttle {
			return model.Response{}, &model.Error{Class: job.RateLimited, Detail: "ThrottlingException"}
		}
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3, OutputTokens: 1}}, nil
	})
	buckets := memstore.NewBuckets()
	f.rateLimited(job.RateLimit{Grain: job.GrainEntry, Throttles: true}, buckets)
	a := f.create("k1", nil)
	f.deliver(body(a.ID))
	if got := f.get(a.ID); got.State != job.Queued || got.Attempts != 0 {
		t.Fatalf("after a throttle: %+v", got)
	}
	if bk, _ := buckets.Bucket(t.Context(), "p"); bk.Learned.RequestsPerMinute != job.ThrottledStart {
		t.Fatalf("learned %+v after the first throttle, want %d a minute", bk.Learned, job.ThrottledStart)
	}
	throttle = false
	// Past the pause (a throttle without a retry-after pauses for a
	// burst, and the bucket's times stand a burst beyond it); at 60 a
	// minute the bucket then holds one call.
	time.Sleep(2*job.Burst + 50*time.Millisecond)
	b := f.create("k2", nil)
	f.deliver(body(b.ID))
	if got := f.get(b.ID); got.State != job.Succeeded {
		t.Fatalf("after the pause: %+v", got)
	}
	if bk, _ := buckets.Bucket(t.Context(), "p"); bk.Learned.RequestsPerMinute != job.ThrottledStart+1 {
		t.Fatalf("learned %+v after an answer, want %d a minute", bk.Learned, job.ThrottledStart+1)
	}
}
