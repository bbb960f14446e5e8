package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// TestATenantsSpendNeverPassesItsLimit is issue 41's end-to-end test,
// scaled down (30 jobs, not 500): one tenant's jobs, submitted at once
// at a concurrency of 10, under a day limit that covers about 40% of
// them at their real cost (and one worst case, which the last of them
// holds to start). Spend ends at or under the limit, on the
// records and on the shared balance; every job either succeeded or waits
// deferred spend_limit (uncounted, never called), none failed; a new
// create is then refused 429 spend_limit, a repeat still a repeat; and a
// stack restarted on the same tables with the limit raised runs the
// deferred ones. The limit is shared through the buckets table by every
// concurrent batch of the dev server.
func TestATenantsSpendNeverPassesItsLimit(t *testing.T) {
	t.Parallel()
	const jobs = 30
	prefix, endpoint := awstest.Prefix(t), awstest.Endpoint(t)
	env := map[string]string{"AIJOBS_MAX_CONCURRENCY": "10", "AIJOBS_BATCH_SIZE": "3",
		"AIJOBS_LEASE_TTL": steadyLease["AIJOBS_LEASE_TTL"], "AIJOBS_HEARTBEAT": steadyLease["AIJOBS_HEARTBEAT"],
		"AIJOBS_WORKER_TIMEOUT": "30s", "AIJOBS_VISIBILITY_TIMEOUT": "31s",
		// A job of a few cents: the limit's unit is a cent.
		"AIJOBS_PRICE_INPUT": "100000", "AIJOBS_PRICE_OUTPUT": "400000"}
	probe, stopProbe := startSpendStack(t, prefix, endpoint, env)
	// One job of another tenant, unlimited, prices a job: its cost is
	// every job's (the same input, the same fake answer).
	cost := probe.costOf(probe.submit("probe", "probe", jobBody("spend job", "")))
	var in job.Input
	_ = json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"spend job"}],"max_tokens":50}`), &in)
	worst := probe.app.Config.Routes["default"].Reserve(in, nil)
	// About 40% of the jobs' real cost, and the one worst case the last
	// of them must hold to start.
	limit := cost*jobs*4/10 + worst
	cents := (limit + job.NanosPerCent - 1) / job.NanosPerCent
	limit = cents * job.NanosPerCent // whole cents: the variable's unit
	t.Logf("a job costs %s cents, holds %s; the limit is %s cents", cost, worst, limit)
	stopProbe() // its workers know no limit, and share the queue

	env["AIJOBS_TENANT_SPEND"] = fmt.Sprintf("day=$%d.%02d,jwt:probe=none", int64(cents)/100, int64(cents)%100)
	s, stop := startSpendStack(t, prefix, endpoint, env)
	ids := make([]string, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() { ids[i] = s.submit("busy", fmt.Sprint("spend-", i), jobBody("spend job", "")) })
	}
	wg.Wait()
	// Settled: no deferred job's worst case fits what the limit leaves.
	spentOf := func(ran []job.Job) job.Nanocents {
		var n job.Nanocents
		for _, j := range ran {
			n += j.Cost
		}
		return n
	}
	ran, waiting := s.awaitSpendSettled(ids, time.Minute, func(ran []job.Job) bool { return spentOf(ran)+worst > limit })
	spent := spentOf(ran)
	if spent > limit || len(ran) == 0 || len(waiting) == 0 {
		t.Fatalf("%d jobs ran, spending %s of a limit of %s; %d deferred", len(ran), spent, limit, len(waiting))
	}
	b, err := dynamodb.NewSpend(s.ddb, s.app.Config.BucketsTable).Balance(context.Background(),
		job.SpendHold{Tenant: "jwt:busy", Period: job.Day, At: time.Now(), Limit: limit})
	if err != nil || b.Spent != spent || b.Held != 0 {
		t.Fatalf("the shared balance: %+v (%v), want %s spent and nothing held", b, err, spent)
	}
	t.Logf("%d of %d jobs ran, spending %s of %s; %d deferred spend_limit", len(ran), jobs, spent, limit, len(waiting))
	// What was spent leaves less than a worst case: a new create is
	// refused, and a repeat of an accepted one is still a repeat.
	if r, _ := s.send("POST", "/jobs", "busy", map[string]string{"Idempotency-Key": "spend-new"}, jobBody("spend job", "")); r.status != 429 ||
		r.body["code"] != "spend_limit" || r.header.Get("Retry-After") == "" {
		t.Errorf("a create with less than a worst case left: %d %s %v", r.status, r.raw, r.header)
	}
	if r, _ := s.send("POST", "/jobs", "busy", map[string]string{"Idempotency-Key": "spend-0"}, jobBody("spend job", "")); r.status != 200 {
		t.Errorf("a repeat of an accepted job: %d %s", r.status, r.raw)
	}
	stop()

	env["AIJOBS_TENANT_SPEND"] = "day=$1000"
	raised, _ := startSpendStack(t, prefix, endpoint, env)
	for _, j := range awaitAll(t, raised, waiting, time.Minute) {
		if j.State != job.Succeeded || j.Attempts != 1 {
			t.Errorf("deferred job %s once the limit was raised: %s after %d attempts (%s %s)", j.ID, j.State, j.Attempts, j.ErrorClass, j.ErrorDetail)
		}
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

// awaitSpendSettled waits until every job either succeeded or waits
// deferred for spend (queued, spend_limit, never attempted), and full
// says of the succeeded ones that no more can run; it answers them apart.
// Any other end fails the test, and so does a stall.
func (s *stack) awaitSpendSettled(ids []string, stall time.Duration, full func([]job.Job) bool) (ran []job.Job, waiting []string) {
	s.t.Helper()
	awaitProgress(s.t, stall, 200*time.Millisecond, func() (int, bool) {
		ran, waiting = nil, nil
		for _, id := range ids {
			j, err := s.app.Store.Get(context.Background(), id)
			switch {
			case err != nil:
			case j.State == job.Succeeded:
				ran = append(ran, j)
			case j.State == job.Queued && j.ErrorClass == job.SpendLimit && j.Attempts == 0 && j.LeaseOwner == "":
				waiting = append(waiting, id)
			case j.State.Terminal():
				s.t.Fatalf("job %s ended %s %s (%s): want succeeded or deferred spend_limit", id, j.State, j.ErrorClass, j.ErrorDetail)
			}
		}
		return len(ran), len(ran)+len(waiting) == len(ids) && full(ran)
	}, func() string {
		return fmt.Sprintf("%d ran, %d deferred for spend, of %d", len(ran), len(waiting), len(ids))
	})
	return ran, waiting
}

// startSpendStack starts a dev server on the tables and queues of prefix
// (a second one on the same prefix finds them made), with env over the
// harness's, and answers it and a stop that ends it: a limit is
// configuration, so raising it is a restart.
func startSpendStack(t *testing.T, prefix, endpoint string, overrides map[string]string) (*stack, func()) {
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
	done := make(chan error, 1)
	go func() { done <- a.DevServer().Serve(ctx, ln) }()
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
		ddb: awsclient.DynamoDB(awsCfg), sqs: awsclient.SQS(awsCfg), client: apiClient(t)}, stop
}
