package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/worker"
)

// spendFixture is a worker whose tenant t1 has a day limit the test sets
// (limit, in nanocents) on an in-memory balance.
func spendFixture(t *testing.T, cost job.Nanocents, spend worker.Spend) (*fixture, *atomic.Int64) {
	f := setup(t, ok(cost))
	var limit atomic.Int64
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Spend = spend
		c.SpendLimits = func(tenant string) []job.PeriodLimit {
			if tenant != "t1" {
				return nil
			}
			return []job.PeriodLimit{{Period: job.Day, Limit: job.Nanocents(limit.Load())}}
		}
		c.Workers = 2
		c.SpendAlarmShare = 0.8
		c.SpendDigest = "limits"
	})
	return f, &limit
}

func reserve(n job.Nanocents) func(*job.Job) { return func(j *job.Job) { j.Reserve = n } }

func dayBalance(t *testing.T, s *memstore.Spend) job.SpendBalance {
	b, err := s.Balance(t.Context(), job.SpendHold{Tenant: "t1", Period: job.Day, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A job whose tenant's balance cannot cover its worst case is deferred
// spend_limit, uncounted, with no call; raised, the limit lets it run.
// Each attempt's settle returns what its worst case over-took.
func TestAJobOverItsTenantsSpendLimitWaitsUntilTheLimitIsRaised(t *testing.T) {
	balance := memstore.NewSpend()
	f, limit := spendFixture(t, 40, balance)
	limit.Store(100)
	a := f.create("k1", reserve(100))
	f.deliver(body(a.ID))
	if got := f.get(a.ID); got.State != job.Succeeded || got.Cost != 40 {
		t.Fatalf("the first job: %+v", got)
	}
	if b := dayBalance(t, balance); b != (job.SpendBalance{Spent: 40}) {
		t.Fatalf("after the first job: %+v, want 40 spent, nothing held (its worst case over-took 60)", b)
	}
	b := f.create("k2", reserve(100))
	f.deliver(body(b.ID))
	waited := f.get(b.ID)
	if waited.State != job.Queued || waited.ErrorClass != job.SpendLimit || waited.Attempts != 0 || waited.Held != 0 || f.prov.generations(b.ID) != 0 {
		t.Fatalf("the job over the limit: %+v, %d generations", waited, f.prov.generations(b.ID))
	}
	if got := dayBalance(t, balance); got != (job.SpendBalance{Spent: 40}) {
		t.Fatalf("a deferred job left the balance at %+v", got)
	}
	if n := f.metrics.get("SpendDeferred"); n != 1 {
		t.Fatalf("SpendDeferred = %v after one deferral for spend, want 1", n)
	}
	limit.Store(1000)
	time.Sleep(time.Until(waited.NotBefore))
	f.deliver(body(b.ID))
	if got := f.get(b.ID); got.State != job.Succeeded || got.Attempts != 1 {
		t.Fatalf("the deferred job once the limit was raised: %+v", got)
	}
	if got := dayBalance(t, balance); got != (job.SpendBalance{Spent: 80}) {
		t.Fatalf("after both: %+v, want 80 spent", got)
	}
}

// A job deferred for its tenant's spend limit until its deadline is
// abandoned spend_limit, never having called.
func TestAJobDeferredForSpendUntilItsDeadlineIsAbandonedSpendLimit(t *testing.T) {
	f, limit := spendFixture(t, 40, memstore.NewSpend())
	limit.Store(0) // $0: nothing may be spent
	j := f.create("k1", func(j *job.Job) { j.Reserve, j.Deadline = 100, job.Millis(time.Now().Add(300*time.Millisecond)) })
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Queued || got.ErrorClass != job.SpendLimit {
		t.Fatalf("deferred: %+v", got)
	}
	time.Sleep(time.Until(j.Deadline) + 10*time.Millisecond)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Abandoned || got.ErrorClass != job.SpendLimit || got.Attempts != 0 || f.prov.generations(j.ID) != 0 {
		t.Fatalf("at its deadline: %+v, %d generations", got, f.prov.generations(j.ID))
	}
}

// downSpend is a balance that never answers.
type downSpend struct{}

func (downSpend) Hold(context.Context, job.SpendHold) (bool, error) {
	return false, errors.New("throttled")
}
func (downSpend) SettleSeen(context.Context, job.SpendSettle) (job.SpendSettled, error) {
	return job.SpendSettled{}, errors.New("throttled")
}
func (downSpend) Holding(context.Context, job.SpendHold) (job.Nanocents, bool, error) {
	return 0, false, errors.New("throttled")
}

// A balance that does not answer lets no call go: the job waits,
// deferred spend_limit, uncounted, and the outage is counted in
// LimitsLocal. No spend goes
// uncounted on the balance (docs/spend.md, "When the balance does not
// answer").
func TestAnUnansweredSpendBalanceLetsNoCallGo(t *testing.T) {
	f, limit := spendFixture(t, 100, downSpend{})
	limit.Store(300)
	a := f.create("k1", reserve(100))
	f.deliver(body(a.ID))
	if got := f.get(a.ID); got.State != job.Queued || got.ErrorClass != job.SpendLimit || got.Attempts != 0 {
		t.Fatalf("a job whose balance did not answer: %+v", got)
	}
	if n := f.metrics.get("LimitsLocal/spend"); n != 1 {
		t.Fatalf("LimitsLocal by spend %v, want 1", n)
	}
}

// A dead attempt's spend hold (its worker died after the hold) is settled
// by the worker that writes it off, as spent, an estimate as on the
// record; the next attempt holds and settles its own: nothing is left
// held, and the balance spent is what the record charged.
func TestADeadAttemptsSpendHoldIsSettledAsSpentWhenWrittenOff(t *testing.T) {
	balance := memstore.NewSpend()
	f, limit := spendFixture(t, 40, balance)
	limit.Store(1000)
	j := f.create("k1", func(j *job.Job) {
		j.Reserve, j.Held = 100, 100
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "dead", job.Millis(time.Now().Add(-time.Second))
	})
	dead := job.SpendHold{Tenant: "t1", Period: job.Day, At: time.Now(), Limit: 1000, Entry: job.SpendEntry(j.ID, 1), Amount: 100}
	if ok, err := balance.Hold(t.Context(), dead); !ok || err != nil {
		t.Fatal(ok, err)
	}
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 2 || got.Cost != 140 {
		t.Fatalf("job = %+v, want succeeded on attempt 2, cost 140", got)
	}
	if b := dayBalance(t, balance); b != (job.SpendBalance{Spent: 140}) {
		t.Fatalf("balance %+v, want 140 spent (the dead hold, 100, and the second attempt's 40), nothing held", b)
	}
}

// A settle that takes the tenant's spend past AIJOBS_SPEND_ALARM_SHARE
// (80% here) of its limit counts SpendShareReached once, and the ones
// before it and after it do not.
func TestASettlePastTheAlarmShareOfTheLimitCountsSpendShareReached(t *testing.T) {
	f, limit := spendFixture(t, 40, memstore.NewSpend())
	limit.Store(100)
	for i, want := range []float64{0, 1} { // 40 spent, then 80: past 80% of 100
		j := f.create("k"+string(rune('1'+i)), reserve(60))
		f.deliver(body(j.ID))
		if got := f.get(j.ID); got.State != job.Succeeded {
			t.Fatalf("job %d: %+v", i+1, got)
		}
		if n := f.metrics.get("SpendShareReached"); n != want {
			t.Fatalf("after job %d: SpendShareReached = %v, want %v", i+1, n, want)
		}
	}
	if n := f.metrics.get("SpendDeferred"); n != 0 {
		t.Fatalf("SpendDeferred = %v with no deferral", n)
	}
}

// A dead attempt whose claim promised to hold its tenant's spend first
// (job.Job.SpendFirst, under this worker's limits) is charged its hold
// only if its hold is on the balance: one found is settled as spent and
// charged as an estimate; none found proves it never called, so it is
// written off charging nothing (docs/spend.md, "Crash windows"). A
// promise under other limits is not trusted: charged, as before.
func TestADeadAttemptIsChargedOnlyIfItsSpendHoldLanded(t *testing.T) {
	for _, c := range []struct {
		name     string
		digest   string
		held     bool
		cost     job.Nanocents // the record's after the next attempt (40)
		spent    job.Nanocents
		estimate bool
	}{
		{"held", "limits", true, 140, 140, true},
		{"never held", "limits", false, 40, 40, false},
		{"other limits", "older", false, 140, 40, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			balance := memstore.NewSpend()
			f, limit := spendFixture(t, 40, balance)
			limit.Store(1000)
			claimed := time.Now().Add(-time.Minute)
			j := f.create("k1", func(j *job.Job) {
				j.Reserve, j.Held, j.SpendFirst = 100, 100, job.SpendFirstOf(c.digest, claimed, "dead")
				j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "dead", job.Millis(time.Now().Add(-time.Second))
			})
			if c.held {
				h := job.SpendHold{Tenant: "t1", Period: job.Day, At: claimed, Limit: 1000, Entry: job.SpendEntry(j.ID, 1), Amount: 100}
				if ok, err := balance.Hold(t.Context(), h); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			f.deliver(body(j.ID))
			got := f.get(j.ID)
			if got.State != job.Succeeded || got.Attempts != 2 || got.Cost != c.cost || got.CostEstimated != c.estimate {
				t.Fatalf("job = %+v, want succeeded on attempt 2, cost %v, estimated %v", got, c.cost, c.estimate)
			}
			if b := dayBalance(t, balance); b != (job.SpendBalance{Spent: c.spent}) {
				t.Fatalf("balance %+v, want %v spent, nothing held", b, c.spent)
			}
		})
	}
}
