package collector_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
)

// meter records the collector's metrics.
type meter struct {
	mu sync.Mutex
	n  map[string]float64
}

func (m *meter) Emit(metric string, value float64, _ string, _ map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]float64{}
	}
	m.n[metric] += value
}

func (m *meter) count(metric string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[metric]
}

// creates answers the Message Batches creates with status (a 4xx or a
// 5xx) and counts them; the rest of the wire is s's.
type creates struct {
	s      *anthropictest.Server
	status int
	typ    string
	mu     sync.Mutex
	n      int
}

func (c *creates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/batches" {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
		if c.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"` + c.typ + `","message":"refused"}}`))
			return
		}
	}
	c.s.Handler().ServeHTTP(w, r)
}

func (c *creates) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// metered is a fixture whose batch lane speaks Anthropic's wire to h, its
// collector counting into the meter it returns, over store (f.store when
// nil).
func metered(t *testing.T, h http.Handler, store func(*fixture) collector.Store) (*fixture, *meter) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	f, m := setup(t, 0, nil), &meter{}
	var s collector.Store = f.store
	if store != nil {
		s = store(f)
	}
	f.c = collector.New(collector.Config{Store: s, Batches: f.batches, Queue: f.queue, Metrics: m,
		Providers: map[string]model.Provider{"f": p}, Routes: map[string]job.Route{"default": f.route}})
	return f, m
}

// onlyRecord is the one batch record f keeps.
func (f *fixture) onlyRecord() job.BatchRecord {
	f.t.Helper()
	f.batches.mu.Lock()
	defer f.batches.mu.Unlock()
	if len(f.batches.open) != 1 {
		f.t.Fatalf("%d batch records, want 1: %+v", len(f.batches.open), f.batches.open)
	}
	for _, r := range f.batches.open {
		return r
	}
	return job.BatchRecord{}
}

// A batch whose create the provider refuses (a 4xx: nothing was made)
// is not left sealed to be sent again every run, nor are its jobs left
// to be written off at their lease's end, their holds charged as
// estimated cost: each is handed back uncounted (no attempt spent),
// charged nothing, its hold returned and its message re-sent; the
// record is closed with the refusal's class and detail (no key in it);
// the refusal is counted once (BatchesRefused). Later runs send nothing.
func TestARefusedBatchHandsItsJobsBackUncountedAndChargedNothing(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		status    int
		class     job.ErrorClass
	}{
		{"invalid request", "invalid_request_error", http.StatusBadRequest, job.InvalidRequest},
		{"auth", "authentication_error", http.StatusUnauthorized, job.Auth},
		{"rate limit", "rate_limit_error", http.StatusTooManyRequests, job.RateLimited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := &creates{s: &anthropictest.Server{Polls: 1}, status: tc.status, typ: tc.typ}
			f, m := metered(t, wire, nil)
			a := f.enlisted("a", "one question", time.Now().Add(time.Hour))
			b := f.enlisted("b", "another", time.Now().Add(time.Hour))
			f.run() // collects, seals, sends: refused
			for _, j := range []job.Job{a, b} {
				got := f.get(j.ID)
				if got.State != job.Queued || got.Attempts != 0 || got.Held != 0 || got.Cost != 0 || got.CostEstimated ||
					got.LeaseOwner != "" || got.ErrorClass != job.CapacityUnavailable || !strings.Contains(got.ErrorDetail, string(tc.class)) {
					t.Errorf("%s: %+v, want queued again, uncounted, charged nothing, naming the refusal", j.RequestKey, got)
				}
			}
			if !sameIDs(f.queue.sent, a.ID, b.ID) {
				t.Errorf("re-sent %v, want both", f.queue.sent)
			}
			r := f.onlyRecord()
			if r.State != job.Settled || r.Refusal != tc.class || r.RefusalDetail == "" || strings.Contains(r.RefusalDetail, "sk-test") ||
				r.ProviderID != "" || len(r.Jobs) != 2 {
				t.Errorf("batch record %+v, want settled with the refusal", r)
			}
			if n := m.count("BatchesRefused"); n != 1 {
				t.Errorf("BatchesRefused %v, want 1", n)
			}
			f.run()
			f.run()
			if n := wire.count(); n != 1 || m.count("BatchesRefused") != 1 || len(f.queue.sent) != 2 {
				t.Errorf("after two more runs: %d creates, %v refusals, %d sent; want the one of each", n, m.count("BatchesRefused"), len(f.queue.sent))
			}
		})
	}
}

// A create that failed without a refusal (a 5xx: the batch may have been
// made) keeps the batch sealed, its jobs in it, to be sent again: only a
// 4xx proves nothing was made.
func TestABatchWhoseCreateFailed5xxStaysSealed(t *testing.T) {
	wire := &creates{s: &anthropictest.Server{Polls: 1}, status: http.StatusInternalServerError, typ: "api_error"}
	f, m := metered(t, wire, nil)
	a := f.enlisted("a", "one question", time.Now().Add(time.Hour))
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("the failed create was not reported")
	}
	if r := f.onlyRecord(); r.State != job.Sealed || r.Refusal != "" || len(r.Jobs) != 1 {
		t.Fatalf("batch record %+v, want sealed", r)
	}
	if got := f.get(a.ID); got.State != job.Running || got.LeaseOwner != job.BatchOwner(got.Batch) || m.count("BatchesRefused") != 0 {
		t.Fatalf("job %+v, want still the batch's", got)
	}
	wire.status = 0
	f.run() // sent again: made
	f.run()
	f.run()
	if got := f.get(a.ID); got.State != job.Succeeded || wire.s.Generated(a.ID) != 1 {
		t.Fatalf("job %+v, generated %d times", got, wire.s.Generated(a.ID))
	}
}

// failingDefer is a store whose first defer fails: a run that dies
// while it hands a refused batch's jobs back.
type failingDefer struct {
	collector.Store
	mu     sync.Mutex
	failed bool
}

func (s *failingDefer) Defer(ctx context.Context, d job.Defer) (job.Job, error) {
	s.mu.Lock()
	first := !s.failed
	s.failed = true
	s.mu.Unlock()
	if first {
		return job.Job{}, errors.New("the store is unreachable")
	}
	return s.Store.Defer(ctx, d)
}

// A run that could not hand back every job of a refused batch leaves
// the record refused, never sealed: the next run hands back the rest and
// sends nothing, so no job handed back uncounted is also generated.
func TestARefusedBatchIsNeverSentAgain(t *testing.T) {
	wire := &creates{s: &anthropictest.Server{Polls: 1}, status: http.StatusBadRequest, typ: "invalid_request_error"}
	f, m := metered(t, wire, func(f *fixture) collector.Store { return &failingDefer{Store: f.store} })
	a := f.enlisted("a", "one question", time.Now().Add(time.Hour))
	b := f.enlisted("b", "another", time.Now().Add(time.Hour))
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("the failed hand-back was not reported")
	}
	if r := f.onlyRecord(); r.State != job.Refused || r.Refusal != job.InvalidRequest {
		t.Fatalf("batch record %+v, want refused", r)
	}
	wire.status = 0 // the provider would take it now: it must not be asked
	f.run()
	for _, j := range []job.Job{a, b} {
		if got := f.get(j.ID); got.State != job.Queued || got.Attempts != 0 || got.Held != 0 || got.Cost != 0 {
			t.Errorf("%s: %+v, want handed back uncounted", j.RequestKey, got)
		}
	}
	if r := f.onlyRecord(); r.State != job.Settled || wire.count() != 1 || m.count("BatchesRefused") != 1 {
		t.Errorf("batch record %+v, %d creates, %v refusals", r, wire.count(), m.count("BatchesRefused"))
	}
}

// failingSeal is a batch store whose first save of a sealed batch fails:
// a run that dies after collecting its jobs, before sealing them.
type failingSeal struct {
	*batches
	failed bool
}

func (s *failingSeal) SaveBatch(ctx context.Context, r job.BatchRecord) error {
	if r.State == job.Sealed && !s.failed {
		s.failed = true
		return errors.New("the collector died")
	}
	return s.batches.SaveBatch(ctx, r)
}

// A batch that lost jobs after it collected them (here one cancelled
// while the run that collected them died) and so fell below the fewest
// its provider takes (MinJobs) is never sent with fewer: it is closed
// unsent and the jobs it collected are handed back uncounted, charged
// nothing, for their workers to plan again; the cancelled one is settled.
func TestABatchBelowItsMinimumIsNotSentWithFewer(t *testing.T) {
	f := setup(t, 0, nil)
	f.route.Rungs[0].Lanes[0].MinJobs = 3
	seal := &failingSeal{batches: f.batches}
	f.c = collector.New(collector.Config{Store: f.store, Batches: seal, Queue: f.queue,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route}})
	a := f.enlisted("a", "one", time.Now().Add(time.Hour))
	b := f.enlisted("b", "two", time.Now().Add(time.Hour))
	gone := f.enlisted("gone", "three", time.Now().Add(time.Hour))
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("the failed seal was not reported")
	}
	for _, j := range []job.Job{a, b, gone} {
		if got := f.get(j.ID); got.Batch == "" || got.LeaseOwner != job.BatchOwner(got.Batch) {
			t.Fatalf("%s: %+v, want collected", j.RequestKey, got)
		}
	}
	if _, err := f.store.Cancel(context.Background(), job.Cancel{ID: gone.ID, Tenant: "t1", Now: time.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	f.run()
	for _, j := range []job.Job{a, b} {
		if got := f.get(j.ID); got.State != job.Queued || got.Attempts != 0 || got.Held != 0 || got.Cost != 0 || got.LeaseOwner != "" {
			t.Errorf("%s: %+v, want handed back uncounted", j.RequestKey, got)
		}
		if f.prov.Calls(j.ID) != 0 {
			t.Errorf("%s sent in a batch of fewer than 3", j.RequestKey)
		}
	}
	if got := f.get(gone.ID); got.State != job.Abandoned || got.Held != 0 || got.Cost != 0 {
		t.Errorf("cancelled: %+v, want abandoned holding nothing", got)
	}
	if r := f.onlyRecord(); r.State != job.Settled || len(r.Jobs) != 0 || r.ProviderID != "" {
		t.Errorf("batch record %+v, want closed unsent", r)
	}
	if !sameIDs(f.queue.sent, a.ID, b.ID) {
		t.Errorf("re-sent %v", f.queue.sent)
	}
}

// A batch that lost a job before it collected any keeps the others
// waiting in the lane (nothing to hand back), unsent, until enough wait.
func TestABatchBelowItsMinimumLeavesItsWaitingJobsInTheLane(t *testing.T) {
	f := setup(t, 0, nil)
	f.route.Rungs[0].Lanes[0].MinJobs = 2
	ctx := context.Background()
	a := f.enlisted("a", "one", time.Now().Add(time.Hour))
	gone := f.enlisted("gone", "two", time.Now().Add(time.Hour))
	// A batch opened by a run that died before it collected anything.
	open := job.BatchRecord{ID: "b_opened", Lane: job.LaneKey("default", 0), Provider: "f", Model: "m", State: job.Collecting,
		Jobs: []job.BatchJob{{ID: a.ID}, {ID: gone.ID}}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := f.batches.OpenBatch(ctx, open); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Cancel(ctx, job.Cancel{ID: gone.ID, Tenant: "t1", Now: time.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	f.run()
	if got := f.get(a.ID); got.State != job.Running || got.Enlisted == "" || got.Batch != "" || f.prov.Calls(a.ID) != 0 {
		t.Fatalf("the job left: %+v, %d calls; want still waiting in the lane", got, f.prov.Calls(a.ID))
	}
	if r := f.onlyRecord(); r.State != job.Settled || len(r.Jobs) != 0 {
		t.Fatalf("batch record %+v, want closed unsent", r)
	}
	b := f.enlisted("b", "three", time.Now().Add(time.Hour))
	f.run() // two wait: a batch of both
	f.run()
	for _, j := range []job.Job{a, b} {
		if got := f.get(j.ID); got.State != job.Succeeded || f.prov.Generations(j.ID) != 1 {
			t.Errorf("%s: %+v", j.RequestKey, got)
		}
	}
}

// sameIDs reports whether got holds want's ids once each, in any order.
func sameIDs(got []string, want ...string) bool {
	g := slices.Sorted(slices.Values(got))
	slices.Sort(want)
	return slices.Equal(g, want)
}
