package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/internal/apispec"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeQueue counts sends per job id and fails while fail is set.
type fakeQueue struct {
	mu    sync.Mutex
	sends map[string]int
	total int
	fail  bool
}

func (q *fakeQueue) Send(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail {
		return errors.New("sqs: SendMessage: AWS.SimpleQueueService.NonExistentQueue secret-vendor-text")
	}
	if q.sends == nil {
		q.sends = map[string]int{}
	}
	q.sends[id]++
	q.total++
	return nil
}

func (q *fakeQueue) setFail(v bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fail = v
}

func (q *fakeQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

func (q *fakeQueue) countFor(id string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sends[id]
}

// env is one handler over a fresh memstore, fake queue and fake clock.
type env struct {
	h     *Handler
	store *memstore.Store
	queue *fakeQueue
	clock *fakeClock
	logs  *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{store: memstore.New(), queue: &fakeQueue{}, clock: &fakeClock{now: t0}, logs: &syncBuffer{}}
	e.h = e.handler(e.store)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("handler logs:\n%s", e.logs.String())
		}
	})
	return e
}

// handler builds a handler over store with the env's queue, clock and logs.
func (e *env) handler(store Store) *Handler {
	s := settings.Defaults()
	return New(Config{
		Store: store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention,
		Clock: e.clock, EnqueueRetryAfter: s.EnqueueRetryAfter, Callbacks: testCallbacks,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

// testCallbacks is the production callback policy over a fixed resolver:
// hooks.example.com is public, internal.example private.
var testCallbacks = webhook.Checker{Resolver: fixedResolver{
	"hooks.example.com": {netip.MustParseAddr("93.184.215.14")},
	"internal.example":  {netip.MustParseAddr("10.0.0.5")},
}}

type fixedResolver map[string][]netip.Addr

func (r fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// fixture loads an API Gateway v2 event from testdata.
func fixture(t testing.TB, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("decode fixture %s: %v", name, err)
	}
	return ev
}

func readBody(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// request is the JWT fixture (tenant-a) with method, path and body set.
func request(t testing.TB, method, path, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	ev := fixture(t, "request-jwt.json")
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path, ev.RawPath = method, path, path
	ev.Body = body
	return ev
}

// createReq is a POST /jobs with key (none when empty) and body.
func createReq(t testing.TB, key, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	ev := request(t, "POST", "/jobs", body)
	if key != "" {
		ev.Headers["idempotency-key"] = key
	}
	return ev
}

func asTenant(ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPRequest {
	claims := map[string]string{}
	for k, v := range ev.RequestContext.Authorizer.JWT.Claims {
		claims[k] = v
	}
	claims["sub"] = tenant
	jwt := *ev.RequestContext.Authorizer.JWT
	jwt.Claims = claims
	a := *ev.RequestContext.Authorizer
	a.JWT = &jwt
	ev.RequestContext.Authorizer = &a
	return ev
}

func (e *env) do(t *testing.T, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := e.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	checkContract(t, ev, resp)
	return resp
}

// checkContract holds an exchange to docs/openapi.yaml. Every request a
// test of this package sends goes through it (e.do, or directly where a
// test calls Handle itself), so the document is checked against every
// answer the handler is tested to give.
func checkContract(t testing.TB, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if err := apispec.CheckEvent(ev, resp); err != nil {
		t.Errorf("the exchange breaks docs/openapi.yaml: %v", err)
	}
}

const simpleBody = `{"input":{"messages":[{"role":"user","content":"hello"}]}}`

// mustCreate creates a job with key and simpleBody and returns its id.
func (e *env) mustCreate(t *testing.T, key string) string {
	t.Helper()
	resp := e.do(t, createReq(t, key, simpleBody))
	if resp.StatusCode != 202 {
		t.Fatalf("create: status %d, body %s", resp.StatusCode, resp.Body)
	}
	return decodeView(t, resp).ID
}

func decodeView(t *testing.T, resp events.APIGatewayV2HTTPResponse) wire.View {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json (body %s)", ct, resp.Body)
	}
	type plain wire.View // View's own UnmarshalJSON would not refuse unknown members
	var v plain
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode view %s: %v", resp.Body, err)
	}
	return wire.View(v)
}

// decodeProblem checks the problem+json shape and returns it.
func decodeProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse) wire.Problem {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json (status %d, body %q)", ct, resp.StatusCode, resp.Body)
	}
	var p wire.Problem
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("decode problem %s: %v", resp.Body, err)
	}
	if p.Status != resp.StatusCode {
		t.Errorf("problem status %d, response status %d", p.Status, resp.StatusCode)
	}
	if want := problemTypeBase + string(p.Code); p.Type != want {
		t.Errorf("type = %q, want %q", p.Type, want)
	}
	if p.Title == "" || p.Detail == "" {
		t.Errorf("problem without title or detail: %s", resp.Body)
	}
	return p
}

// wantProblem asserts status, code and field of a problem response.
func wantProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, code wire.Code, field string) wire.Problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, status, resp.Body)
	}
	p := decodeProblem(t, resp)
	if p.Code != code {
		t.Errorf("code = %q, want %q", p.Code, code)
	}
	if p.Field != field {
		t.Errorf("field = %q, want %q", p.Field, field)
	}
	return p
}

// doneResult is a stored result as the worker writes it (a wire.Result).
const doneResult = `{"output":"done","model":"fake-1","usage":{"input_tokens":3,"output_tokens":1}}`

// succeed drives a job to succeeded through the store's own transitions.
func (e *env) succeed(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	if _, err := e.store.Claim(ctx, job.Claim{ID: id, Owner: "w1", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := e.store.Succeed(ctx, job.Succeed{ID: id, Owner: "w1", Now: now, Settlement: job.Settlement{Cost: 420_000_000},
		Result: json.RawMessage(doneResult), Model: "fake-1", ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("succeed: %v", err)
	}
}
