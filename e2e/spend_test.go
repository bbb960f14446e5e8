package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/devserver"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/fake"
	"github.com/aijobs/aijobs/pkg/wire"
)

// spendJobs is the spend test's scale: issue 41's 500 jobs by default,
// at a worker concurrency of a tenth of them. A smaller figure is for an
// emulator that cannot carry that load in make test's time (moto, one
// Python process), never for kumo.
var spendJobs = flag.Int("spend.jobs", 500, "jobs of the spend limit test (issue 41 asks 500, at concurrency 50)")

// TestATenantsSpendNeverPassesItsLimit is issue 41's end-to-end test at
// the scale (-spend.jobs, 500): one tenant's jobs, all accepted
// before the workers start, run at a concurrency of a tenth of them
// (50) under a day limit that covers about 40% of them at their real
// cost (and one worst case, which the last of them holds to start).
// Spend ends at or under the limit, on the records and on the shared
// balance (the store's and GET /spend's), which counts every recorded
// cent; every job either succeeded or waits deferred spend_limit
// (uncounted, never called), none failed; a new create is then refused
// 429 spend_limit, a repeat still a repeat; and a stack restarted on the
// same tables with the limit raised runs every deferred one to success.
// The limit is shared through the buckets table by every concurrent batch
// of the dev server.
func TestATenantsSpendNeverPassesItsLimit(t *testing.T) {
	t.Parallel()
	jobs := *spendJobs
	prefix, endpoint := awstest.Prefix(t), awstest.Endpoint(t)
	env := spendEnv(jobs)
	c := priceSpend(t, prefix, endpoint, env, jobs)
	cents := c.limit / job.NanosPerCent
	env["AIJOBS_TENANT_SPEND"] = fmt.Sprintf("day=$%d.%02d,jwt:probe=none", int64(cents)/100, int64(cents)%100)
	// Every job is accepted before the workers start, as behind an event
	// source mapping turned on after the queue filled: with both at once,
	// the first jobs ran while the last were created, and the create's own
	// check refused the rest 429 spend_limit before they were jobs.
	s, workers, stop := startSpendStack(t, prefix, endpoint, env, false)
	ids := s.submitAll("busy", "spend-", jobs)
	s.runUntilSpent("jwt:busy", ids, workers, c)
	b := s.balanceOf("jwt:busy", c.limit)
	fresh := s.createsWhenSpent("busy", b, c)
	view := s.spendView("busy")
	stop()

	// At rest, the stack stopped: the records, the store's balance and
	// the tenant's view agree, and stay at or under the limit.
	ran, waiting := s.spendSettled(ids)
	if len(waiting) == 0 {
		t.Fatalf("all %d jobs ran: the limit deferred none", len(ran))
	}
	lost, left := c.heldToRecords(t, ran, b, view)
	s.heldToCalls(ran, waiting, c.cost)
	t.Logf("%d of %d jobs ran, spending %s of %s; %d deferred spend_limit; %d settles lost and %d holds left (counted until the day ends)",
		len(ran), jobs, spentOf(ran), c.limit, len(waiting), lost, left)

	env["AIJOBS_TENANT_SPEND"] = "day=$1000"
	raised, _, _ := startSpendStack(t, prefix, endpoint, env, true)
	waiting = append(waiting, fresh...)
	raised.awaitEnded("jwt:busy", waiting, time.Minute)
	after := 0
	for _, j := range awaitAll(t, raised, waiting, time.Minute) {
		if j.State != job.Succeeded || j.Attempts != 1 || raised.fake.Calls(j.ID) != 1 {
			t.Errorf("deferred job %s once the limit was raised: %s after %d attempts, %d calls (%s %s)",
				j.ID, j.State, j.Attempts, raised.fake.Calls(j.ID), j.ErrorClass, j.ErrorDetail)
			continue
		}
		after++
	}
	t.Logf("the limit raised: %d of the %d deferred jobs succeeded, one attempt and one call each", after, len(waiting))
}

// spendCase is what the spend test's jobs cost and hold, and its limit.
type spendCase struct{ cost, worst, limit job.Nanocents }

// priceSpend prices a job on a stack that knows no limit, and sets the
// limit for jobs of them: about 40% of their real cost, and the one worst
// case the last of them must hold to start, in whole cents (the
// variable's unit).
func priceSpend(t *testing.T, prefix, endpoint string, env map[string]string, jobs int) spendCase {
	t.Helper()
	probe, _, stopProbe := startSpendStack(t, prefix, endpoint, env, true)
	defer stopProbe() // its workers know no limit, and share the queue
	// One job of another tenant, unlimited, prices a job: its cost is
	// every job's (the same input, the same fake answer).
	c := spendCase{cost: probe.costOf(probe.submit("probe", "probe", jobBody("spend job", "")))}
	var in job.Input
	_ = json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"spend job"}],"max_tokens":50}`), &in)
	c.worst = probe.app.Config.Routes["default"].Reserve(in, nil)
	limit := c.cost*job.Nanocents(jobs)*4/10 + c.worst
	c.limit = (limit + job.NanosPerCent - 1) / job.NanosPerCent * job.NanosPerCent
	t.Logf("%d jobs at concurrency %s: a job costs %s cents, holds %s; the limit is %s cents", jobs, env["AIJOBS_MAX_CONCURRENCY"], c.cost, c.worst, c.limit)
	return c
}

// createsWhenSpent checks the API's creates once the workers rest: a
// repeat of an accepted job is still a repeat, and a new create is
// refused 429 spend_limit when what settled leaves less than its worst
// case, as it does unless a settle was lost (the create counts no holds:
// docs/spend.md, "Seen coming: the API"). A create accepted then is
// answered, to run once the limit is raised.
func (s *stack) createsWhenSpent(tenant string, b job.SpendBalance, c spendCase) (fresh []string) {
	s.t.Helper()
	if r, _ := s.send("POST", "/jobs", tenant, map[string]string{"Idempotency-Key": "spend-0"}, jobBody("spend job", "")); r.status != 200 {
		s.t.Errorf("a repeat of an accepted job: %d %s", r.status, r.raw)
	}
	r, _ := s.send("POST", "/jobs", tenant, map[string]string{"Idempotency-Key": "spend-new"}, jobBody("spend job", ""))
	switch settledRoom := c.limit-b.Spent >= c.worst; {
	case settledRoom && r.status == 202:
		return []string{r.body["id"].(string)}
	case !settledRoom && r.status == 429 && r.body["code"] == "spend_limit" && r.header.Get("Retry-After") != "":
		return nil
	}
	s.t.Errorf("a create with %s settled of %s, a worst case %s: %d %s %v", b.Spent, c.limit, c.worst, r.status, r.raw, r.header)
	return nil
}

// heldToRecords checks the shared balance against the records of the jobs
// that ran: both at or under the limit, and the balance counting every
// recorded cent, spent or still held (docs/spend.md, "Crash windows": a
// settle that never lands leaves its job's worst case held; a deferred
// attempt whose hold's answer was lost may leave one too). It answers
// the lost settles and the other holds left. GET /spend shows the same.
func (c spendCase) heldToRecords(t *testing.T, ran []job.Job, b job.SpendBalance, view wire.SpendPeriod) (lost, left int) {
	t.Helper()
	spent := spentOf(ran)
	if spent > c.limit || len(ran) == 0 {
		t.Fatalf("%d jobs ran, spending %s of a limit of %s", len(ran), spent, c.limit)
	}
	unsettled := spent - b.Spent
	if b.Spent+b.Held > c.limit || unsettled < 0 || unsettled%c.cost != 0 || b.Held%c.worst != 0 ||
		unsettled/c.cost > b.Held/c.worst || b.Remaining(c.limit) >= c.worst {
		t.Fatalf("the shared balance: %+v of %s, want the records' %s spent, or held at a worst case (%s) by a job that ran, and less than a worst case left",
			b, c.limit, spent, c.worst)
	}
	if view.Period != string(job.Day) || view.LimitCents != c.limit || view.SpentCents != b.Spent || view.HeldCents != b.Held {
		t.Errorf("GET /spend: %+v, want the balance %+v of %s", view, b, c.limit)
	}
	lost = int(unsettled / c.cost)
	return lost, int(b.Held/c.worst) - lost
}

// spendEnv is the spend test's configuration at its scale, before the
// limit is set.
func spendEnv(jobs int) map[string]string {
	return map[string]string{"AIJOBS_MAX_CONCURRENCY": fmt.Sprint(max(10, jobs/10)), "AIJOBS_BATCH_SIZE": "3",
		"AIJOBS_LEASE_TTL": steadyLease["AIJOBS_LEASE_TTL"], "AIJOBS_HEARTBEAT": steadyLease["AIJOBS_HEARTBEAT"],
		"AIJOBS_WORKER_TIMEOUT": "30s", "AIJOBS_VISIBILITY_TIMEOUT": "31s",
		// A deferred job comes back after the tenant's wait, doubling with
		// its receives up to this ceiling (production's is 5 minutes): at
		// the harness's 1 s, 300 deferred jobs are 300 claims and deferrals
		// a second, all of kumo a shared machine can give under -race
		// (API calls overran their 10 s, claims failed, and messages were
		// dead-lettered at their receive limit). 8 s is also the longest a
		// deferred job waits once the limit is raised.
		"AIJOBS_BACKOFF_MAX": "8s",
		// A job of a few cents: the limit's unit is a cent.
		"AIJOBS_PRICE_INPUT": "100000", "AIJOBS_PRICE_OUTPUT": "400000"}
}

// spentOf is what the records of ran say they cost.
func spentOf(ran []job.Job) job.Nanocents {
	var n job.Nanocents
	for _, j := range ran {
		n += j.Cost
	}
	return n
}

// submitAll creates n jobs of tenant, keyed prefix0 to prefix<n-1>, a
// few at a time: all at once, 500 creates overran the API function's
// timeout on a shared machine, and the test is about the worker's holds,
// not the API's load. The first create is held to docs/openapi.yaml as
// every test's are; the others are the same request and answer, and
// checking each of them again compiled the document's schemas anew, a
// fifth of the whole test's CPU under -race.
func (s *stack) submitAll(tenant, prefix string, n int) []string {
	s.t.Helper()
	ids := make([]string, n)
	ids[0] = s.submit(tenant, prefix+"0", jobBody("spend job", ""))
	bulk := *s
	bulk.client = &http.Client{Timeout: s.client.Timeout}
	next := make(chan int, n)
	for i := 1; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range 8 {
		// A submit that fails the test ends its goroutine only; the others
		// drain the rest, and the test ends below.
		wg.Go(func() {
			for i := range next {
				ids[i] = bulk.submit(tenant, fmt.Sprint(prefix, i), jobBody("spend job", ""))
			}
		})
	}
	wg.Wait()
	if s.t.Failed() {
		s.t.FailNow()
	}
	return ids
}

// listed is every job of tenant by id, as its list answers them (the
// tenant index's summary): a few queries a page of 100, where reading
// each of 500 jobs is 500 reads a poll.
func (s *stack) listed(tenant string) map[string]job.Job {
	s.t.Helper()
	all := map[string]job.Job{}
	q := job.ListQuery{Tenant: tenant, Limit: job.MaxListLimit}
	for {
		page, err := s.app.Store.List(context.Background(), q)
		if err != nil {
			s.t.Logf("listing %s's jobs: %v; polling again", tenant, err)
			return all
		}
		for _, j := range page.Jobs {
			all[j.ID] = j
		}
		if page.Next == "" {
			return all
		}
		q.Cursor = page.Next
	}
}

// costOf is what job id cost once it ended.
func (s *stack) costOf(id string) job.Nanocents {
	s.t.Helper()
	ended := awaitAll(s.t, s, []string{id}, 30*time.Second)
	if len(ended) != 1 || ended[0].State != job.Succeeded {
		s.t.Fatalf("the probe job %s: %+v", id, ended)
	}
	return ended[0].Cost
}

// runUntilSpent runs the workers until, at rest, the tenant's balance
// leaves less than a worst case: no deferred job can hold its attempt.
// Once the jobs that ran leave no room, the mapping is turned off and
// what it received worked off, so that the stop after ends no claim
// halfway (a claim cut off after it landed leaves its job leased, and its
// attempt is written off later). Room left at rest (holds of jobs still
// running had filled the balance) turns the workers on again.
func (s *stack) runUntilSpent(tenant string, ids []string, workers *mapping, c spendCase) {
	s.t.Helper()
	workers.on.Store(true)
	for round := 1; ; round++ {
		s.awaitSpendFull(tenant, ids, c)
		workers.off(s.t)
		b := s.balanceOf(tenant, c.limit)
		if b.Remaining(c.limit) < c.worst {
			break
		}
		s.t.Logf("round %d: at rest, %s of the limit is left, a worst case or more: the workers run on", round, b.Remaining(c.limit))
		workers.on.Store(true)
	}
	var ran []job.Job
	var others map[string]int
	var resting map[string]bool
	awaitProgress(s.t, time.Minute, time.Second, func() (int, bool) {
		resting = map[string]bool{}
		ran, others = s.spendLook(tenant, ids, resting)
		return len(resting), len(ran)+len(resting) == len(ids)
	}, func() string {
		return fmt.Sprintf("the workers off, %d ran and %d rest deferred for spend, of %d; the others %v", len(ran), len(resting), len(ids), others)
	})
}

// awaitSpendFull waits until every job has succeeded or been seen
// deferred for spend (so each was received at least once, and will rest
// deferred again when it next is) and the jobs that ran, by tenant's
// list, leave no room for a worst case, or, when a settle was lost (its
// hold counted until the day ends, so the records leave room the balance
// does not), the balance leaves none and no job has succeeded for 5 s. A
// stall fails the test.
func (s *stack) awaitSpendFull(tenant string, ids []string, c spendCase) {
	s.t.Helper()
	var ran []job.Job
	var others map[string]int
	var b job.SpendBalance
	seen := map[string]bool{}
	last, since := -1, time.Now()
	awaitProgress(s.t, time.Minute, time.Second, func() (int, bool) {
		ran, others = s.spendLook(tenant, ids, seen)
		if len(ran) != last {
			last, since = len(ran), time.Now()
		}
		b, _ = dynamodb.NewSpend(s.ddb, s.app.Config.BucketsTable).Balance(context.Background(),
			job.SpendHold{Tenant: tenant, Period: job.Day, At: time.Now(), Limit: c.limit})
		full := spentOf(ran)+c.worst > c.limit || (b.Remaining(c.limit) < c.worst && time.Since(since) > 5*time.Second)
		return len(ran) + len(seen), full && len(ran)+len(seen) == len(ids)
	}, func() string {
		return fmt.Sprintf("%d ran, spending %s, %d seen deferred for spend, the others %v; the balance %+v of %s", len(ran), spentOf(ran), len(seen), others, b, c.limit)
	})
}

// spendLook is tenant's jobs of ids by its list: the succeeded ones, and
// the others by state and class; it marks in deferred each job it finds
// deferred for spend (queued, spend_limit, never attempted). Any other
// end fails the test.
func (s *stack) spendLook(tenant string, ids []string, deferred map[string]bool) (ran []job.Job, others map[string]int) {
	s.t.Helper()
	all := s.listed(tenant)
	others = map[string]int{}
	for _, id := range ids {
		j, ok := all[id]
		switch {
		case !ok:
			others["unlisted"]++
		case j.State == job.Succeeded:
			ran = append(ran, j)
			delete(deferred, id) // deferred before it ran
		case j.State.Terminal():
			s.t.Fatalf("job %s ended %s %s: want succeeded or deferred spend_limit", id, j.State, j.ErrorClass)
		default:
			if j.State == job.Queued && j.ErrorClass == job.SpendLimit && j.Attempts == 0 {
				deferred[id] = true
			}
			others[fmt.Sprint(j.State, "/", j.ErrorClass, "/", j.Attempts)]++
		}
	}
	return ran, others
}

// balanceOf is tenant's day balance at limit, read from the store.
func (s *stack) balanceOf(tenant string, limit job.Nanocents) job.SpendBalance {
	s.t.Helper()
	b, err := dynamodb.NewSpend(s.ddb, s.app.Config.BucketsTable).Balance(context.Background(),
		job.SpendHold{Tenant: tenant, Period: job.Day, At: time.Now(), Limit: limit})
	if err != nil {
		s.t.Fatalf("the shared balance: %v", err)
	}
	return b
}

// spendSettled reads every job (strongly consistent, the stack stopped)
// and answers the succeeded ones and the ones waiting deferred for spend
// (queued, spend_limit, never attempted, no lease); any other fails the
// test.
func (s *stack) spendSettled(ids []string) (ran []job.Job, waiting []string) {
	s.t.Helper()
	for _, id := range ids {
		j, err := s.app.Store.Get(context.Background(), id)
		switch {
		case err != nil:
			s.t.Fatalf("job %s: %v", id, err)
		case j.State == job.Succeeded:
			ran = append(ran, j)
		case j.State == job.Queued && j.ErrorClass == job.SpendLimit && j.Attempts == 0 && j.LeaseOwner == "":
			waiting = append(waiting, id)
		default:
			s.t.Fatalf("job %s: %s %s after %d attempts, lease %q (%s): want succeeded or deferred spend_limit",
				id, j.State, j.ErrorClass, j.Attempts, j.LeaseOwner, j.ErrorDetail)
		}
	}
	return ran, waiting
}

// heldToCalls checks the records against the fake's calls: each job
// that ran was called once and cost what it was billed, the probe's cost
// (or says its cost is estimated), and no deferred one was ever called.
func (s *stack) heldToCalls(ran []job.Job, waiting []string, cost job.Nanocents) {
	s.t.Helper()
	for _, j := range ran {
		calls, billed := s.fake.Calls(j.ID), s.fake.Billed(j.ID)
		if calls != 1 || (!j.CostEstimated && (j.Cost != billed || j.Cost != cost)) {
			s.t.Errorf("job %s ran: %d calls billed %s, recorded %s (estimated %v), want one call at %s", j.ID, calls, billed, j.Cost, j.CostEstimated, cost)
		}
	}
	for _, id := range waiting {
		if n := s.fake.Calls(id); n != 0 {
			s.t.Errorf("deferred job %s was called %d times", id, n)
		}
	}
}

// spendView is tenant's day balance as GET /spend answers it.
func (s *stack) spendView(tenant string) wire.SpendPeriod {
	s.t.Helper()
	r, _ := s.retried("GET", "/spend", tenant, nil, "")
	var v wire.Spend
	if err := json.Unmarshal(r.raw, &v); r.status != 200 || err != nil || len(v.Periods) != 1 {
		s.t.Fatalf("GET /spend: %d %s (%v), want the day's balance", r.status, r.raw, err)
	}
	return v.Periods[0]
}

// awaitEnded waits, from tenant's list, until every one of ids has
// ended: a poll of a few queries where reading each would be hundreds.
func (s *stack) awaitEnded(tenant string, ids []string, stall time.Duration) {
	s.t.Helper()
	var pending []string
	awaitProgress(s.t, stall, time.Second, func() (int, bool) {
		all := s.listed(tenant)
		pending = nil
		for _, id := range ids {
			if j, ok := all[id]; !ok || !j.State.Terminal() {
				pending = append(pending, id)
			}
		}
		return len(ids) - len(pending), len(pending) == 0
	}, func() string {
		return fmt.Sprintf("%d of %d jobs had not ended, among them %v", len(pending), len(ids), pending[:min(5, len(pending))])
	})
}

// startSpendStack starts a dev server on the tables and queues of prefix
// (a second one on the same prefix finds them made), with env over the
// harness's, and answers it and a stop that ends it: a limit is
// configuration, so raising it is a restart. Its workers receive through
// the mapping it answers, on as on says.
func startSpendStack(t *testing.T, prefix, endpoint string, overrides map[string]string, on bool) (*stack, *mapping, func()) {
	t.Helper()
	env := testEnv(prefix, endpoint)
	for k, v := range overrides {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	f := fake.New(fake.Config{Latency: cfg.Shortcut.FakeLatency, Price: cfg.Shortcut.Price})
	called := &firstCalls{Provider: f, at: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true, Counter: awsclient.NewCounter(), EveryProvider: called})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := a.DevServer()
	m := &mapping{Source: srv.Poller.Source}
	m.on.Store(on)
	srv.Poller.Source, srv.Poller.Handler = m, m.invoking(srv.Poller.Handler)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("dev server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	awsCfg := awstest.Config(t, nil)
	return &stack{t: t, url: "http://" + ln.Addr().String(), app: a, fake: f, called: called,
		ddb: awsclient.DynamoDB(awsCfg), sqs: awsclient.SQS(awsCfg), client: apiClient(t)}, m, stop
}

// mapping is the queue as an event source mapping an operator can turn
// off and on: while off, a receive is a short empty poll, and the
// messages wait in the queue. busy counts the receives in progress and
// the invocations of the batches they received.
type mapping struct {
	devserver.Source
	on   atomic.Bool
	busy atomic.Int64
}

func (m *mapping) Receive(ctx context.Context, max int, wait time.Duration) ([]events.SQSMessage, error) {
	if m.on.Load() {
		m.busy.Add(1)
		got, err := m.Source.Receive(ctx, max, wait)
		if len(got) == 0 {
			m.busy.Add(-1) // no batch, no invocation
		}
		return got, err
	}
	select {
	case <-time.After(min(wait, 100*time.Millisecond)):
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// invoking is h, counted out of busy as each invocation ends. The dev
// server's batch window is 0 s in these tests: one receive, one batch.
func (m *mapping) invoking(h devserver.WorkerHandler) devserver.WorkerHandler {
	return func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		defer m.busy.Add(-1)
		return h(ctx, e)
	}
}

// off turns the mapping off and waits until nothing it received is still
// being worked on: after it, no claim is in flight. An invocation ends
// by its function timeout, so a minute more is a hang.
func (m *mapping) off(t *testing.T) {
	t.Helper()
	m.on.Store(false)
	for deadline := time.Now().Add(time.Minute); m.busy.Load() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workers turned off a minute ago, %d receives and invocations still running", m.busy.Load())
		}
	}
}
