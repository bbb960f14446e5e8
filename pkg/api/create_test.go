package api

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

func withInput(rest string) string {
	return `{"input":{"messages":[{"role":"user","content":"hello"}]}` + rest + `}`
}

func TestCreateRefusesBadInputWithoutWriting(t *testing.T) {
	b64 := func(s string) func(*events.APIGatewayV2HTTPRequest) {
		return func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(s)), true
		}
	}
	header := func(k, v string) func(*events.APIGatewayV2HTTPRequest) {
		return func(ev *events.APIGatewayV2HTTPRequest) { ev.Headers[k] = v }
	}
	big := `{"input":{"messages":[{"role":"user","content":"` + strings.Repeat("x", MaxBodyBytes) + `"}]}}`
	tests := []struct {
		name   string
		key    string
		body   string
		mutate func(*events.APIGatewayV2HTTPRequest)
		status int
		code   wire.Code
		field  string
	}{
		{name: "missing key", body: simpleBody, status: 400, code: wire.CodeInvalidRequest, field: "Idempotency-Key"},
		{name: "oversized key", key: strings.Repeat("k", 256), body: simpleBody, status: 400, code: wire.CodeInvalidRequest, field: "Idempotency-Key"},
		{name: "control character in key", key: "a\x01b", body: simpleBody, status: 400, code: wire.CodeInvalidRequest, field: "Idempotency-Key"},
		{name: "non-ASCII key", key: "clé", body: simpleBody, status: 400, code: wire.CodeInvalidRequest, field: "Idempotency-Key"},
		{name: "empty body", body: "", status: 400, code: wire.CodeInvalidRequest},
		{name: "malformed JSON", body: `{"input":`, status: 400, code: wire.CodeInvalidRequest},
		{name: "JSON array", body: `[` + simpleBody + `]`, status: 400, code: wire.CodeInvalidRequest},
		{name: "null", body: `null`, status: 400, code: wire.CodeInvalidRequest},
		{name: "trailing data", body: simpleBody + ` {}`, status: 400, code: wire.CodeInvalidRequest},
		{name: "missing input", body: `{"model":"default"}`, status: 400, code: wire.CodeInvalidRequest, field: "input"},
		{name: "input null", body: `{"input":null}`, status: 400, code: wire.CodeInvalidRequest, field: "input"},
		{name: "input an array", body: `{"input":[1]}`, status: 400, code: wire.CodeInvalidRequest, field: "input"},
		{name: "input a string", body: `{"input":"hello"}`, status: 400, code: wire.CodeInvalidRequest, field: "input"},
		{name: "empty messages", body: `{"input":{"messages":[]}}`, status: 400, code: wire.CodeInvalidRequest, field: "input.messages"},
		{name: "bad role", body: `{"input":{"messages":[{"role":"tool","content":"x"}]}}`, status: 400, code: wire.CodeInvalidRequest, field: "input.messages[0].role"},
		{name: "unknown top-level field", body: withInput(`,"priority":1`), status: 400, code: wire.CodeInvalidRequest, field: "priority"},
		{name: "unknown lane", body: withInput(`,"lanes":["batch"]`), status: 400, code: wire.CodeInvalidRequest, field: "lanes"},
		{name: "no lanes", body: withInput(`,"lanes":[]`), status: 400, code: wire.CodeInvalidRequest, field: "lanes"},
		{name: "a lane twice", body: withInput(`,"lanes":["flex","flex"]`), status: 400, code: wire.CodeInvalidRequest, field: "lanes"},
		{name: "lanes a string", body: withInput(`,"lanes":"flex"`), status: 400, code: wire.CodeInvalidRequest, field: "lanes"},
		{name: "a lane the route does not offer", body: withInput(`,"lanes":["priority"]`), status: 400, code: wire.CodeInvalidRequest, field: "lanes"},
		{name: "unknown input field", body: `{"input":{"messages":[{"role":"user","content":"x"}],"top_k":1}}`, status: 400, code: wire.CodeInvalidRequest, field: "input.top_k"},
		{name: "deadline 0", body: withInput(`,"deadline_seconds":0`), status: 400, code: wire.CodeInvalidRequest, field: "deadline_seconds"},
		{name: "deadline above limit", body: withInput(`,"deadline_seconds":86401`), status: 400, code: wire.CodeInvalidRequest, field: "deadline_seconds"},
		{name: "deadline 1.5", body: withInput(`,"deadline_seconds":1.5`), status: 400, code: wire.CodeInvalidRequest, field: "deadline_seconds"},
		{name: "deadline a string", body: withInput(`,"deadline_seconds":"10"`), status: 400, code: wire.CodeInvalidRequest, field: "deadline_seconds"},
		{name: "max_attempts above limit", body: withInput(`,"max_attempts":9`), status: 400, code: wire.CodeInvalidRequest, field: "max_attempts"},
		{name: "max_attempts a string", body: withInput(`,"max_attempts":"3"`), status: 400, code: wire.CodeInvalidRequest, field: "max_attempts"},
		{name: "budget negative", body: withInput(`,"budget_cents":-1`), status: 400, code: wire.CodeInvalidRequest, field: "budget_cents"},
		{name: "budget above limit", body: withInput(`,"budget_cents":10000.5`), status: 400, code: wire.CodeInvalidRequest, field: "budget_cents"},
		{name: "budget with 10 decimals", body: withInput(`,"budget_cents":0.0000000001`), status: 400, code: wire.CodeInvalidRequest, field: "budget_cents"},
		{name: "budget a string", body: withInput(`,"budget_cents":"10"`), status: 400, code: wire.CodeInvalidRequest, field: "budget_cents"},
		{name: "max_tokens above limit", body: `{"input":{"messages":[{"role":"user","content":"x"}],"max_tokens":32769}}`, status: 400, code: wire.CodeInvalidRequest, field: "input.max_tokens"},
		{name: "unknown model", body: withInput(`,"model":"gpt-17"`), status: 400, code: wire.CodeInvalidRequest, field: "model"},
		{name: "metadata not an object", body: withInput(`,"metadata":[1,2]`), status: 400, code: wire.CodeInvalidRequest, field: "metadata"},
		{name: "body over the limit", body: big, status: 413, code: wire.CodePayloadTooLarge},
		{name: "base64 body over the limit", mutate: b64(big), status: 413, code: wire.CodePayloadTooLarge},
		{name: "base64 not base64", body: "not base64!", mutate: func(ev *events.APIGatewayV2HTTPRequest) { ev.IsBase64Encoded = true }, status: 400, code: wire.CodeInvalidRequest},
		{name: "base64 of malformed JSON", mutate: b64(`{"input":`), status: 400, code: wire.CodeInvalidRequest},
		{name: "base64 of unknown field", mutate: b64(withInput(`,"x":1`)), status: 400, code: wire.CodeInvalidRequest, field: "x"},
		{name: "text/plain", body: simpleBody, mutate: header("content-type", "text/plain"), status: 415, code: wire.CodeUnsupportedMediaType, field: "Content-Type"},
		{name: "unparsable content type", body: simpleBody, mutate: header("content-type", "application/json; ;"), status: 415, code: wire.CodeUnsupportedMediaType, field: "Content-Type"},
		{name: "json suffix type", body: simpleBody, mutate: header("content-type", "application/problem+json"), status: 415, code: wire.CodeUnsupportedMediaType, field: "Content-Type"},
		{name: "no tenant", body: simpleBody, mutate: func(ev *events.APIGatewayV2HTTPRequest) { ev.RequestContext.Authorizer = nil }, status: 401, code: wire.CodeUnauthorized},
		{name: "empty sub claim", body: simpleBody, mutate: func(ev *events.APIGatewayV2HTTPRequest) { *ev = asTenant(*ev, "") }, status: 401, code: wire.CodeUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			key := tc.key
			if key == "" && tc.field != "Idempotency-Key" {
				key = "key-1"
			}
			ev := createReq(t, key, tc.body)
			if tc.mutate != nil {
				tc.mutate(&ev)
			}
			resp := e.do(t, ev)
			wantProblem(t, resp, tc.status, tc.code, tc.field)
			if resp.Headers["Cache-Control"] != "no-store" {
				t.Errorf("Cache-Control = %q", resp.Headers["Cache-Control"])
			}
			if n := e.store.Len(); n != 0 {
				t.Errorf("%d records written for an invalid request", n)
			}
			if n := e.queue.count(); n != 0 {
				t.Errorf("%d messages sent for an invalid request", n)
			}
		})
	}
}

func TestCreateAccepted(t *testing.T) {
	e := newEnv(t)
	resp := e.do(t, createReq(t, "order-42", readBody(t, "create-body.json")))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
	}
	id := job.NewID("jwt:tenant-a", "order-42")
	if got := resp.Headers["Location"]; got != "/jobs/"+id {
		t.Errorf("Location = %q", got)
	}
	if resp.Headers["ETag"] != `"1"` || resp.Headers["Idempotent-Replayed"] != "" {
		t.Errorf("headers = %v", resp.Headers)
	}
	v := decodeView(t, resp)
	want := wire.View{
		ID: id, State: job.Queued, RequestKey: "order-42", InputHash: v.InputHash, Model: "default",
		MaxAttempts: 4, BudgetCents: job.Cents(50), Result: v.Result, Metadata: v.Metadata,
		CreatedAt: wire.Time{Time: t0}, UpdatedAt: wire.Time{Time: t0}, Deadline: wire.Time{Time: t0.Add(15 * time.Minute)}, Version: 1,
	}
	if v.ErrorClass != nil || string(v.Result) != "null" || string(v.Metadata) != `{"any":"json"}` {
		t.Errorf("error_class %v, result %s, metadata %s", v.ErrorClass, v.Result, v.Metadata)
	}
	if !strings.HasPrefix(v.InputHash, "sha256:") || len(v.InputHash) != len("sha256:")+64 {
		t.Errorf("input_hash = %q", v.InputHash)
	}
	if v.ID != want.ID || v.State != want.State || v.RequestKey != want.RequestKey || v.Model != want.Model ||
		v.Attempts != 0 || v.MaxAttempts != want.MaxAttempts || v.BudgetCents != want.BudgetCents ||
		v.CostCents != 0 || v.Progress != 0 || !v.CreatedAt.Equal(want.CreatedAt.Time) || !v.UpdatedAt.Equal(want.UpdatedAt.Time) ||
		!v.Deadline.Equal(want.Deadline.Time) || v.Version != want.Version {
		t.Errorf("view = %+v\nwant %+v", v, want)
	}
	for _, s := range []string{`"error_class":null`, `"result":null`, `"cost_cents":0,`, `"budget_cents":50,`,
		`"created_at":"2026-01-01T12:00:00.000Z"`, `"updated_at":"2026-01-01T12:00:00.000Z"`, `"deadline":"2026-01-01T12:15:00.000Z"`} {
		if !strings.Contains(resp.Body, s) {
			t.Errorf("body lacks %s: %s", s, resp.Body)
		}
	}
	for _, s := range []string{"tenant", "lease", `"input"`, "Summarise", "result_model"} {
		if strings.Contains(resp.Body, s) {
			t.Errorf("body holds %s: %s", s, resp.Body)
		}
	}
	if e.store.Len() != 1 || e.queue.countFor(id) != 1 {
		t.Errorf("records %d, sends %d", e.store.Len(), e.queue.countFor(id))
	}
	logs := e.logs.String()
	for _, secret := range []string{"secret-token-never-logged", "Summarise"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs hold %q:\n%s", secret, logs)
		}
	}
}

func TestCreateAcceptsHeaderAndEncodingVariants(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*events.APIGatewayV2HTTPRequest)
	}{
		{"no content type", func(ev *events.APIGatewayV2HTTPRequest) { delete(ev.Headers, "content-type") }},
		{"charset parameter", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["content-type"] = "application/json; charset=utf-8"
		}},
		{"mixed-case names and type", func(ev *events.APIGatewayV2HTTPRequest) {
			delete(ev.Headers, "content-type")
			delete(ev.Headers, "idempotency-key")
			ev.Headers["Content-Type"], ev.Headers["Idempotency-Key"] = "Application/JSON", "key-1"
		}},
		{"base64 body", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(ev.Body)), true
		}},
		{"body at the size limit", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = simpleBody + strings.Repeat(" ", MaxBodyBytes-len(simpleBody))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ev := createReq(t, "key-1", simpleBody)
			tc.mutate(&ev)
			resp := e.do(t, ev)
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
			}
			if v := decodeView(t, resp); v.ID != job.NewID("jwt:tenant-a", "key-1") || e.queue.countFor(v.ID) != 1 {
				t.Errorf("id %s, sends %d", v.ID, e.queue.countFor(v.ID))
			}
		})
	}
}

func TestCreateReplaysSameBody(t *testing.T) {
	e := newEnv(t)
	first := e.do(t, createReq(t, "order-42", readBody(t, "create-body.json")))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first create: %d %s", first.StatusCode, first.Body)
	}
	id := decodeView(t, first).ID
	e.clock.Advance(time.Second)
	for i, body := range []string{readBody(t, "create-body.json"), readBody(t, "create-body-reordered.json")} {
		resp := e.do(t, createReq(t, "order-42", body))
		if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
			t.Fatalf("repeat %d: status %d, headers %v, body %s", i, resp.StatusCode, resp.Headers, resp.Body)
		}
		if resp.Headers["Location"] != "/jobs/"+id {
			t.Errorf("Location = %q", resp.Headers["Location"])
		}
		if v := decodeView(t, resp); v.ID != id || !v.CreatedAt.Equal(t0) || v.Version != 1 {
			t.Errorf("repeat %d view = %+v", i, v)
		}
	}
	if e.store.Len() != 1 {
		t.Errorf("%d records, want 1", e.store.Len())
	}
	// Still queued with no attempts: each repeat re-sends (harmless, the claim dedupes).
	if n := e.queue.countFor(id); n != 3 {
		t.Errorf("sends = %d, want 3", n)
	}
}

func TestCreateReplayOfClaimedJobDoesNotResend(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	e.succeed(t, id)
	resp := e.do(t, createReq(t, "k", simpleBody))
	if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
	}
	if v := decodeView(t, resp); v.State != job.Succeeded {
		t.Errorf("state = %s", v.State)
	}
	if n := e.queue.countFor(id); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
}

func TestCreateRefusesReusedKey(t *testing.T) {
	tests := []struct{ name, body string }{
		{"other content", `{"input":{"messages":[{"role":"user","content":"goodbye"}]}}`},
		{"changed option", withInput(`,"max_attempts":3`)},
		{"default made explicit", withInput(`,"max_attempts":4`)},
		{"metadata added", withInput(`,"metadata":{"a":1}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := e.mustCreate(t, "k")
			resp := e.do(t, createReq(t, "k", tc.body))
			wantProblem(t, resp, http.StatusUnprocessableEntity, wire.CodeKeyReused, "Idempotency-Key")
			if e.store.Len() != 1 || e.queue.countFor(id) != 1 {
				t.Errorf("records %d, sends %d", e.store.Len(), e.queue.countFor(id))
			}
		})
	}
}

func TestCreateSameKeyOtherTenantIsAnotherJob(t *testing.T) {
	e := newEnv(t)
	a := e.mustCreate(t, "k")
	resp := e.do(t, asTenant(createReq(t, "k", `{"input":{"messages":[{"role":"user","content":"other"}]}}`), "tenant-b"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
	}
	if b := decodeView(t, resp).ID; b == a || e.store.Len() != 2 {
		t.Errorf("ids %s %s, records %d", a, b, e.store.Len())
	}
}

func TestCreateQueueFailureHealsOnRetry(t *testing.T) {
	e := newEnv(t)
	e.queue.setFail(true)
	resp := e.do(t, createReq(t, "k", simpleBody))
	wantProblem(t, resp, http.StatusServiceUnavailable, wire.CodeEnqueueFailed, "")
	if got := resp.Headers["Retry-After"]; got != "2" {
		t.Errorf("Retry-After = %q, want 2", got)
	}
	if strings.Contains(resp.Body, "sqs") || strings.Contains(resp.Body, "secret-vendor-text") {
		t.Errorf("body leaks the queue error: %s", resp.Body)
	}
	id := job.NewID("jwt:tenant-a", "k")
	if j, err := e.store.Get(t.Context(), id); err != nil || j.State != job.Queued || j.Attempts != 0 {
		t.Fatalf("record after failed send: %+v, %v", j, err)
	}

	// The retry also fails to send: still 503, still one record.
	resp = e.do(t, createReq(t, "k", simpleBody))
	wantProblem(t, resp, http.StatusServiceUnavailable, wire.CodeEnqueueFailed, "")
	if resp.Headers["Retry-After"] != "2" || e.store.Len() != 1 {
		t.Errorf("Retry-After %q, records %d", resp.Headers["Retry-After"], e.store.Len())
	}

	e.queue.setFail(false)
	resp = e.do(t, createReq(t, "k", simpleBody))
	if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("healed retry: status %d, body %s", resp.StatusCode, resp.Body)
	}
	if n := e.queue.countFor(id); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
	if !strings.Contains(e.logs.String(), "secret-vendor-text") {
		t.Errorf("the queue error is not logged:\n%s", e.logs.String())
	}
}

// A create that names lanes keeps them on the job, and its reserve is
// the cheapest of them its route's first rung offers.
func TestCreateKeepsTheLanesAskedFor(t *testing.T) {
	e := newEnv(t)
	s := settings.Defaults()
	std := job.Rung{Provider: "p", Model: "m", Price: job.Price{InputPerToken: 4, OutputPerToken: 8}, Timeout: time.Minute}
	flex := std
	flex.Lane, flex.Base, flex.Price = job.Flex, std.Price, job.Price{InputPerToken: 2, OutputPerToken: 4}
	std.Lanes = []job.Rung{flex}
	route := job.Route{Rungs: []job.Rung{std}}
	e.h = New(Config{
		Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: map[string]job.Route{"default": route}, Callbacks: testCallbacks,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
	})
	reserves := map[string]job.Nanocents{}
	for key, lanes := range map[string][]job.Lane{"any": nil, "flex": {job.Flex}, "standard": {job.Standard}} {
		body := simpleBody
		if lanes != nil {
			body = withInput(`,"lanes":["` + string(lanes[0]) + `"]`)
		}
		resp := e.do(t, createReq(t, key, body))
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: status %d, body %s", key, resp.StatusCode, resp.Body)
		}
		if v := decodeView(t, resp); !slices.Equal(v.Lanes, lanes) {
			t.Errorf("%s: view lanes %v", key, v.Lanes)
		}
		j, err := e.store.Get(context.Background(), job.NewID("jwt:tenant-a", key))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(j.Lanes, lanes) || j.Reserve <= 0 {
			t.Errorf("%s: lanes %v reserve %s, want %v and a reserve", key, j.Lanes, j.Reserve, lanes)
		}
		reserves[key] = j.Reserve
	}
	// Flex's price is half standard's: a job that may take flex reserves
	// its worst case there, half what one held to standard reserves.
	if reserves["any"] != reserves["flex"] || 2*reserves["flex"] != reserves["standard"] {
		t.Errorf("reserves %v: want any = flex = half of standard", reserves)
	}
}
