package worker_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// lanes is a fixture whose one rung offers flex (half the price, p99 one
// minute) and priority (double, p99 200 ms) beside standard (p99 one
// second), on a provider that answers each lane as a script says and
// records the lanes it was asked for.
type lanes struct {
	*fixture
	mu    sync.Mutex
	asked []job.Lane
	flex  job.Price
	prio  job.Price
	route job.Route
}

func setupLanes(t *testing.T, byLane map[job.Lane]func(context.Context, model.Request, int) (model.Response, error)) *lanes {
	l := &lanes{}
	l.fixture = setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		l.mu.Lock()
		l.asked = append(l.asked, r.Lane)
		l.mu.Unlock()
		if step, ok := byLane[r.Lane]; ok {
			return step(ctx, r, n)
		}
		return model.Response{Output: "ok", Model: "m1", Usage: model.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	})
	// The fixture's standard price is 1 and 2 nanocents a token.
	l.flex = job.Price{InputPerToken: 1, OutputPerToken: 1}
	l.prio = job.Price{InputPerToken: 2, OutputPerToken: 4}
	std := job.Rung{Provider: "p", Model: "m1", Price: l.price, Timeout: 2 * time.Second, Completion: time.Second}
	flex, prio := std, std
	flex.Lane, flex.Base, flex.Price, flex.Timeout, flex.Completion = job.Flex, std.Price, l.flex, 2*time.Second, time.Minute
	prio.Lane, prio.Base, prio.Price, prio.Completion = job.Priority, std.Price, l.prio, 200*time.Millisecond
	std.Lanes = []job.Rung{flex, prio}
	l.route = job.Route{Rungs: []job.Rung{std}}
	l.w = l.newWorker(l.store, func(c *worker.Config) {
		c.Routes = map[string]job.Route{"default": l.route}
		// A capacity wait is a backoff: from 5 s, so that a job due
		// sooner has no time for one.
		c.Timing.BackoffBase, c.Timing.BackoffMax = 10*time.Second, 20*time.Second
	})
	return l
}

func (l *lanes) lanesAsked() []job.Lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]job.Lane(nil), l.asked...)
}

// laneJob is a job due in deadline that allows allowed (nil: any).
func (l *lanes) laneJob(key string, deadline time.Duration, allowed ...job.Lane) job.Job {
	return l.create(key, func(j *job.Job) {
		j.Deadline, j.Lanes = job.Millis(time.Now().Add(deadline)), allowed
		in := job.Input{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 10}
		j.Reserve = job.Route{Rungs: []job.Rung{{Price: l.flex}}}.Reserve(in, nil)
	})
}

func capacityRefusal(context.Context, model.Request, int) (model.Response, error) {
	return model.Response{}, &model.Error{Class: job.CapacityUnavailable, Detail: "429"}
}

// 100 input and 10 output tokens at the standard price (1 and 2
// nanocents a token) cost 120; at flex's (1 and 1) 110; at priority's
// (2 and 4) 240.
const standardCost, flexCost, priorityCost = 120, 110, 240

func TestAJobWithTimeToSpareRunsInTheCheapestLane(t *testing.T) {
	l := setupLanes(t, nil)
	j := l.laneJob("k1", time.Hour)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.ResultLane != job.Flex || got.Cost != flexCost || got.Saved != standardCost-flexCost || got.Held != 0 {
		t.Fatalf("job = %+v, want succeeded in flex at %d, saving %d", got, flexCost, standardCost-flexCost)
	}
}

func TestAJobDueSoonRunsInTheCheapestLaneThatFits(t *testing.T) {
	l := setupLanes(t, nil)
	j := l.laneJob("k1", 30*time.Second) // flex's p99 is a minute
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.ResultLane != job.Standard || got.Cost != standardCost || got.Saved != 0 || got.Held != 0 {
		t.Fatalf("job = %+v, want succeeded in standard; its hold (flex's reserve) raised and returned", got)
	}
	if asked := l.lanesAsked(); len(asked) != 1 || asked[0] != job.Standard {
		t.Fatalf("lanes asked %v", asked)
	}
}

func TestAPremiumLaneRecordsWhatItCostAboveStandard(t *testing.T) {
	l := setupLanes(t, nil)
	j := l.laneJob("k1", 30*time.Second, job.Priority)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.ResultLane != job.Priority || got.Cost != priorityCost || got.Saved != standardCost-priorityCost {
		t.Fatalf("job = %+v, want priority at %d, saved %d", got, priorityCost, standardCost-priorityCost)
	}
}

// OpenAI's priority processing answers service_tier "default" past its
// ramp limit and bills standard rates (platform.openai.com/docs/guides/
// priority-processing); Bedrock's ServiceTier says the same. The record
// carries what was billed: no premium, nothing saved, the standard lane.
func TestAPriorityCallServedAtStandardIsPricedAtStandard(t *testing.T) {
	l := setupLanes(t, map[job.Lane]func(context.Context, model.Request, int) (model.Response, error){
		job.Priority: func(context.Context, model.Request, int) (model.Response, error) {
			return model.Response{Output: "ok", Model: "m1", Usage: model.Usage{InputTokens: 100, OutputTokens: 10}, Served: job.Standard}, nil
		}})
	j := l.laneJob("k1", 30*time.Second, job.Priority)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.ResultLane != job.Standard || got.Cost != standardCost || got.Saved != 0 || got.Held != 0 {
		t.Fatalf("job = %+v, want succeeded at the standard %d, nothing saved", got, standardCost)
	}
	if asked := l.lanesAsked(); len(asked) != 1 || asked[0] != job.Priority {
		t.Fatalf("lanes asked %v, want priority", asked)
	}
}

func TestACapacityRefusalMovesTheCallToTheNextLaneInTheSameAttempt(t *testing.T) {
	l := setupLanes(t, map[job.Lane]func(context.Context, model.Request, int) (model.Response, error){job.Flex: capacityRefusal})
	j := l.laneJob("k1", time.Hour)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 1 || got.ResultLane != job.Standard || got.Cost != standardCost || got.Held != 0 {
		t.Fatalf("job = %+v, want one attempt, answered in standard", got)
	}
	if asked := l.lanesAsked(); len(asked) != 2 || asked[0] != job.Flex || asked[1] != job.Standard {
		t.Fatalf("lanes asked %v, want flex then standard", asked)
	}
	// The record names the attempt's last call's lane: what it was priced at.
	if want := []job.AttemptLane{{Attempt: 1, Lane: job.Standard}}; !slices.Equal(got.AttemptLanes, want) {
		t.Fatalf("attempt lanes %v, want %v", got.AttemptLanes, want)
	}
	if l.metrics.get("LaneMoves/capacity_unavailable") != 1 {
		t.Fatalf("LaneMoves metric = %v", l.metrics.counts)
	}
}

func TestARefusalInTheOnlyLaneAllowedIsAWaitNotAnAttempt(t *testing.T) {
	l := setupLanes(t, map[job.Lane]func(context.Context, model.Request, int) (model.Response, error){job.Flex: capacityRefusal})
	j := l.laneJob("k1", time.Hour, job.Flex)
	if r := l.deliver(body(j.ID)); len(r.BatchItemFailures) != 1 {
		t.Fatalf("the deferred job's message must stay: %v", failedIDs(r))
	}
	got := l.get(j.ID)
	if got.State != job.Queued || got.Attempts != 0 || got.Held != 0 || got.Cost != 0 || !got.NotBefore.After(time.Now()) ||
		got.ErrorClass != job.CapacityUnavailable {
		t.Fatalf("job = %+v, want queued again, uncounted, nothing held, a wait ahead", got)
	}
	if len(got.AttemptLanes) != 0 {
		t.Fatalf("attempt lanes %v: an uncounted wait is no attempt", got.AttemptLanes)
	}
}

// With no time for a wait before the deadline, the refusal is the
// attempt's failure, and the decision after it abandons the job.
func TestARefusalWithNoTimeForAWaitEndsTheJob(t *testing.T) {
	l := setupLanes(t, map[job.Lane]func(context.Context, model.Request, int) (model.Response, error){job.Flex: capacityRefusal})
	j := l.laneJob("k1", 3*time.Second, job.Flex) // the backoff ends after the deadline
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.Attempts != 1 || got.State != job.Abandoned || got.ErrorClass != job.DeadlineExceeded {
		t.Fatalf("job = %+v, want the attempt counted and the job abandoned: deadline_exceeded", got)
	}
}

// A slow lane gives way to a faster one while the deadline can still be
// met: the flex call is cut when only the standard lane's p99 is left.
func TestASlowLaneGivesWayBeforeTheDeadline(t *testing.T) {
	hang := func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		<-ctx.Done()
		return model.Response{}, &model.Error{Class: job.Timeout, Usage: model.Usage{InputTokens: 1, Estimated: true}, Err: ctx.Err()}
	}
	l := setupLanes(t, map[job.Lane]func(context.Context, model.Request, int) (model.Response, error){job.Flex: hang})
	// Flex's p99 of one second fits the 1.4 s left, so the plan is flex
	// then standard (p99 one second): flex must be cut at about 0.4 s.
	route := l.route
	route.Rungs = []job.Rung{route.Rungs[0]}
	route.Rungs[0].Lanes = slices.Clone(route.Rungs[0].Lanes)
	route.Rungs[0].Lanes[0].Completion = time.Second
	l.w = l.newWorker(l.store, func(c *worker.Config) { c.Routes = map[string]job.Route{"default": route} })
	j := l.laneJob("k1", 1400*time.Millisecond, job.Flex, job.Standard)
	start := time.Now()
	l.deliver(body(j.ID))
	took := time.Since(start)
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.ResultLane != job.Standard || got.Attempts != 1 {
		t.Fatalf("job = %+v, want answered in standard in one attempt", got)
	}
	if asked := l.lanesAsked(); !slices.Equal(asked, []job.Lane{job.Flex, job.Standard}) {
		t.Fatalf("lanes asked %v, want flex then standard", asked)
	}
	if took > 1300*time.Millisecond {
		t.Fatalf("took %s: the flex call was not cut a p99 before the deadline", took)
	}
}

// A job with time for the batch lane's p99 is enlisted, not called: the
// batch lane holds its lease until the next lane's p99 before its
// deadline, its hold raised to the batch price's worst case, its message
// deleted; the collector (pkg/collector) submits and settles it.
func TestAJobWithTimeForABatchIsEnlistedNotCalled(t *testing.T) {
	l := setupLanes(t, nil)
	route := l.route
	batch := route.Rungs[0]
	batch.Lane, batch.Base, batch.Price, batch.Timeout, batch.Completion, batch.Lanes = job.Batch, batch.Price, job.Price{InputPerToken: 1}, 0, time.Hour, nil
	route.Rungs = []job.Rung{route.Rungs[0]}
	route.Rungs[0].Lanes = append(slices.Clone(route.Rungs[0].Lanes), batch)
	l.w = l.newWorker(l.store, func(c *worker.Config) { c.Routes = map[string]job.Route{"default": route} })
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 10}
	// A reserve below the batch price's worst case: the claim holds it,
	// and the enlist must raise the hold to the worst case.
	j := l.create("k1", func(j *job.Job) {
		j.Deadline, j.Reserve = job.Millis(time.Now().Add(3*time.Hour)), 1
	})
	if batch.WorstCase(in) <= j.Reserve {
		t.Fatalf("the batch worst case %s must exceed the reserve %s", batch.WorstCase(in), j.Reserve)
	}
	if r := l.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("the enlisted job's message must go: %v", failedIDs(r))
	}
	got := l.get(j.ID)
	wantUntil := job.Millis(got.Deadline.Add(-time.Minute)) // flex's p99, the next lane
	if got.State != job.Running || got.LeaseOwner == "" || !got.InBatchLane() || got.Enlisted != job.LaneKey("default", 0) ||
		!got.LeaseUntil.Equal(wantUntil) || got.Held != batch.WorstCase(in) || got.Attempts != 1 {
		t.Fatalf("job = %+v, want enlisted in the batch lane until %s", got, wantUntil)
	}
	if asked := l.lanesAsked(); len(asked) != 0 {
		t.Fatalf("the provider was called: %v", asked)
	}
	j2 := l.laneJob("k2", 30*time.Minute) // a batch's p99 is an hour
	l.deliver(body(j2.ID))
	if got := l.get(j2.ID); got.State != job.Succeeded || got.ResultLane != job.Flex {
		t.Fatalf("a job due sooner than a batch: %+v, want answered in flex", got)
	}
}

// When flex refuses and the next lane's key has an empty bucket, the job
// waits the bucket's time, not a short backoff: the standard lane has
// capacity, only not yet.
func TestARefusalBeforeAnEmptyBucketWaitsTheBucketsTime(t *testing.T) {
	l := setupLanes(t, map[job.Lane]func(context.Context, model.Request, int) (model.Response, error){job.Flex: capacityRefusal})
	route := l.route
	route.Rungs = []job.Rung{route.Rungs[0]}
	route.Rungs[0].Limit = job.RateLimit{RequestsPerMinute: 6} // one call every 10 s
	route.Rungs[0].Lanes = slices.Clone(route.Rungs[0].Lanes)
	for i := range route.Rungs[0].Lanes {
		route.Rungs[0].Lanes[i].Limit = route.Rungs[0].Limit
	}
	l.w = l.newWorker(l.store, func(c *worker.Config) {
		c.Routes, c.Buckets = map[string]job.Route{"default": route}, memstore.NewBuckets()
	})
	j := l.laneJob("k1", time.Hour)
	start := time.Now()
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Queued || got.Attempts != 0 || got.ErrorClass != job.CapacityUnavailable || got.Held != 0 {
		t.Fatalf("job = %+v, want deferred uncounted", got)
	}
	if w := got.NotBefore.Sub(start); w < 9*time.Second {
		t.Fatalf("deferred for %s, want the bucket's 10 s", w)
	}
}

// A batch lane the job cannot enter (its stay there would not outlast a
// collector period) is skipped, not moved from: the next lane's call is
// the attempt's first, on the admission's take (the key allows one call
// in ten seconds), and no lane move is counted.
func TestABatchLaneTooShortToEnterIsSkippedNotMovedFrom(t *testing.T) {
	l := setupLanes(t, nil)
	route := l.route
	route.Rungs = []job.Rung{route.Rungs[0]}
	batch := route.Rungs[0]
	batch.Lane, batch.Base, batch.Price, batch.Timeout, batch.Completion, batch.Lanes = job.Batch, batch.Price, job.Price{InputPerToken: 1}, 0, time.Minute, nil
	route.Rungs[0].Limit = job.RateLimit{RequestsPerMinute: 6}
	route.Rungs[0].Lanes = append(slices.Clone(route.Rungs[0].Lanes), batch)
	for i := range route.Rungs[0].Lanes {
		route.Rungs[0].Lanes[i].Limit = route.Rungs[0].Limit
	}
	l.w = l.newWorker(l.store, func(c *worker.Config) {
		c.Routes, c.Buckets = map[string]job.Route{"default": route}, memstore.NewBuckets()
		c.Timing.CollectEvery = 2 * time.Hour // longer than the job could wait in the lane
	})
	j := l.laneJob("k1", time.Hour)
	l.deliver(body(j.ID))
	if got := l.get(j.ID); got.State != job.Succeeded || got.ResultLane != job.Flex || got.Attempts != 1 {
		t.Fatalf("job = %+v, want answered in flex on the admission's take", got)
	}
	for name := range l.metrics.counts {
		if strings.HasPrefix(name, "LaneMoves") {
			t.Fatalf("metrics %v: a skipped lane counted as a move", l.metrics.counts)
		}
	}
}

// batchRoute is l's route whose one rung also offers a batch lane at one
// nanocent an input token, with p99 p99.
func (l *lanes) batchRoute(p99 time.Duration) job.Route {
	route := l.route
	route.Rungs = []job.Rung{route.Rungs[0]}
	batch := route.Rungs[0]
	batch.Lane, batch.Base, batch.Price, batch.Timeout, batch.Completion, batch.Lanes = job.Batch, batch.Price, job.Price{InputPerToken: 1}, 0, p99, nil
	route.Rungs[0].Lanes = append(slices.Clone(route.Rungs[0].Lanes), batch)
	return route
}

// A job that allows only the batch lane, due too soon for the lane to
// hold it a window and a collector period, is not served: its attempt
// ends deadline_exceeded with nothing called, billed or held, never
// succeeded with an empty result.
func TestABatchOnlyJobTooSoonForTheLaneIsAbandoned(t *testing.T) {
	l := setupLanes(t, nil)
	route := l.batchRoute(time.Minute)
	l.w = l.newWorker(l.store, func(c *worker.Config) {
		c.Routes = map[string]job.Route{"default": route}
		c.Timing.CollectEvery = 2 * time.Hour
	})
	j := l.laneJob("k1", time.Hour, job.Batch)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.DeadlineExceeded || got.Result != nil || got.Cost != 0 || got.Held != 0 {
		t.Fatalf("job = %+v, want abandoned deadline_exceeded, nothing paid or held", got)
	}
	if asked := l.lanesAsked(); len(asked) != 0 {
		t.Fatalf("the provider was called: %v", asked)
	}
}

// A batch lane whose stay would end before the batch's p99, the job
// then due back in the next lane, is skipped for that lane: the batch
// would usually answer after the hand-back, and both would be billed.
func TestABatchLaneThatWouldHandBackBeforeItsP99IsSkipped(t *testing.T) {
	l := setupLanes(t, nil)
	route := l.batchRoute(time.Hour)
	l.w = l.newWorker(l.store, func(c *worker.Config) { c.Routes = map[string]job.Route{"default": route} })
	// The batch's p99 (1 h) fits the time left, but the stay before
	// flex's p99 (1 min) is due does not: 1 h 30 s less 1 min.
	j := l.laneJob("k1", time.Hour+30*time.Second)
	l.deliver(body(j.ID))
	if got := l.get(j.ID); got.State != job.Succeeded || got.ResultLane != job.Flex || got.InBatchLane() {
		t.Fatalf("job = %+v, want answered in flex, never enlisted", got)
	}
}
