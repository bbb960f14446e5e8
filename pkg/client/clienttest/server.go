// Package clienttest runs the real aijobs API handler in process, behind
// the local dev server's API Gateway stand-in (Authorization: Bearer
// <tenant> becomes the JWT subject), over an in-memory store and a fake
// queue. Tests of the client and of the CLI drive it over HTTP and move
// jobs through their states directly in the store, as a worker would.
package clienttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/apispec"
	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/devserver"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

// T0 is when the fake clock starts.
var T0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// worker names the lease owners of the transitions made through the
// Server: one per attempt, as a real worker's claims have (a store
// recognises a second finish by one owner as a repeat of the first).
const worker = "clienttest-worker"

// owner is the lease owner of id's attempt number n.
func owner(n int) string { return fmt.Sprintf("%s-%d", worker, n) }

// current is the lease owner of id's current attempt.
func (s *Server) current(t testing.TB, id string) string {
	t.Helper()
	j, err := s.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("clienttest: get %s: %v", id, err)
	}
	return owner(j.Attempts)
}

// SpenderLimit is the day limit of a tenant whose name ends "spender".
const SpenderLimit = 100 * job.NanosPerCent

// Server is one API over a fresh store, queue and clock.
type Server struct {
	URL   string
	Store *memstore.Store
	Queue *Queue
	Clock *Clock
	// Spend is the tenants' spend balances: a tenant whose name ends
	// "spender" has a day limit of SpenderLimit (docs/spend.md).
	Spend *memstore.Spend

	mu       sync.Mutex
	requests []Request
}

// Request is what the server received, for assertions on headers.
type Request struct {
	Method, Path, RawQuery string
	Header                 http.Header
}

// Start serves the API until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{Store: memstore.New(), Queue: &Queue{}, Clock: &Clock{now: T0}, Spend: memstore.NewSpend()}
	def := settings.Defaults()
	log := slog.New(slog.DiscardHandler)
	h := api.New(api.Config{
		Store: s.Store, Queue: s.Queue, Limits: def.Limits, Retention: def.Retention,
		Clock: s.Clock, EnqueueRetryAfter: def.EnqueueRetryAfter, Logger: log,
		Spend: s.Spend, SpendLimits: func(tenant string) []job.PeriodLimit {
			if strings.HasSuffix(tenant, "spender") {
				return []job.PeriodLimit{{Period: job.Day, Limit: SpenderLimit}}
			}
			return nil
		},
	})
	gw := &devserver.Gateway{Handler: h.Handle, Timeout: def.APITimeout, Logger: log}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()})
		s.mu.Unlock()
		checked(t, gw, w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// checked serves r through h and holds the exchange to docs/openapi.yaml
// (apispec): a request or an answer the document does not declare fails
// the test, so the client's tests also test the document.
func checked(t testing.TB, h http.Handler, w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if v, err := apispec.Default(); err != nil {
		t.Errorf("%v", err)
	} else if err := v.Check(apispec.Exchange{Request: r, Body: body, Status: rec.Code,
		Header: rec.Header(), ResponseBody: rec.Body.Bytes()}); err != nil {
		t.Errorf("the exchange breaks docs/openapi.yaml: %v", err)
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// Requests is every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Result is a stored result of output as the worker writes one (a
// wire.Result), for Succeed: the API's document requires its shape.
func Result(output string) string {
	b, _ := json.Marshal(wire.Result{Output: output, Model: "fake", Usage: wire.Usage{InputTokens: 1, OutputTokens: 1}})
	return string(b)
}

// Tenant is the store's tenant of a bearer token, as the API derives it.
func Tenant(token string) string { return "jwt:" + token }

// ID is the job id of a tenant's (bearer token's) idempotency key.
func ID(token, key string) string { return job.NewID(Tenant(token), key) }

// Claim starts an attempt on a queued job, as a worker's claim does.
func (s *Server) Claim(t testing.TB, id string) job.Job {
	t.Helper()
	now := s.Clock.Now()
	cur, err := s.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("clienttest: get %s: %v", id, err)
	}
	j, err := s.Store.Claim(context.Background(), job.Claim{ID: id, Owner: owner(cur.Attempts + 1), Now: now, LeaseUntil: now.Add(time.Minute)})
	return check(t, "claim", j, err)
}

// Progress records a running attempt's progress, as a heartbeat does.
func (s *Server) Progress(t testing.TB, id string, p float64) job.Job {
	t.Helper()
	now := s.Clock.Now()
	j, err := s.Store.Heartbeat(context.Background(), job.Heartbeat{ID: id, Owner: s.current(t, id), Now: now, LeaseUntil: now.Add(time.Minute), Progress: p})
	return check(t, "heartbeat", j, err)
}

// Succeed ends a running attempt with a result and its cost.
func (s *Server) Succeed(t testing.TB, id string, cost job.Nanocents, result string) job.Job {
	t.Helper()
	now := s.Clock.Now()
	j, err := s.Store.Succeed(context.Background(), job.Succeed{ID: id, Owner: s.current(t, id), Now: now, Settlement: job.Settlement{Cost: cost},
		Result: []byte(result), Model: "fake", ExpiresAt: now.Add(time.Hour)})
	return check(t, "succeed", j, err)
}

// End stops a running attempt for good with class (failed or abandoned,
// as the class says).
func (s *Server) End(t testing.TB, id string, cost job.Nanocents, class job.ErrorClass) job.Job {
	t.Helper()
	now := s.Clock.Now()
	j, err := s.Store.End(context.Background(), job.End{ID: id, Owner: s.current(t, id), Now: now, Settlement: job.Settlement{Cost: cost}, Class: class, ExpiresAt: now.Add(time.Hour)})
	return check(t, "end", j, err)
}

func check(t testing.TB, op string, j job.Job, err error) job.Job {
	t.Helper()
	if err != nil {
		t.Fatalf("clienttest: %s: %v", op, err)
	}
	return j
}

// Clock is a settable clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Queue counts sends per job and fails the next ones when told to.
type Queue struct {
	mu    sync.Mutex
	sends map[string]int
	fail  int
}

// Send records a send, or fails it while failures remain.
func (q *Queue) Send(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail > 0 {
		q.fail--
		return errors.New("clienttest: queue unavailable")
	}
	if q.sends == nil {
		q.sends = map[string]int{}
	}
	q.sends[id]++
	return nil
}

// FailNext makes the next n sends fail.
func (q *Queue) FailNext(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fail = n
}

// Sends is how many messages were sent for a job.
func (q *Queue) Sends(id string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sends[id]
}
