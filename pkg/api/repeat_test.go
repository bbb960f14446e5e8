package api

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

// TestARepeatIsARepeatWhateverTheConfigurationSaysToday: a create's
// first try was recorded (its answer lost), then the deployment's
// configuration changed so that the same body, new, would be refused.
// The retry with the same key and body finds its job and is answered as
// every repeat is (200, Idempotent-Replayed, the job); the same body
// under a new key still gets today's refusal, and nothing more is
// recorded (issue O item 5.1).
func TestARepeatIsARepeatWhateverTheConfigurationSaysToday(t *testing.T) {
	cheap := job.Rung{Provider: "oa", Model: "gpt-4o-mini", Price: job.Price{InputPerToken: 1, OutputPerToken: 2}, Timeout: time.Minute}
	withFlex := cheap
	withFlex.Lanes = []job.Rung{{Provider: "oa", Model: "gpt-4o-mini", Lane: job.Flex, Price: cheap.Price, Base: cheap.Price, Timeout: time.Minute}}
	dear := cheap
	dear.Price = job.Price{InputPerToken: job.Cents(1), OutputPerToken: job.Cents(1)}
	fixed := cheap
	fixed.FixedTemperature = true
	takesTopP := cheap
	takesTopP.Takes.TopP = true
	routes := func(g job.Rung) map[string]job.Route {
		return map[string]job.Route{"default": {Rungs: []job.Rung{g}}, "other": {Rungs: []job.Rung{cheap}}}
	}
	both := func(l *job.Limits) { l.Models = []string{"default", "other"} }
	tests := []struct {
		name          string
		body          string
		before, after map[string]job.Route
		limitsBefore  func(*job.Limits)
		limitsAfter   func(*job.Limits)
		status        int
		code          wire.Code
		field         string
	}{
		{name: "the route no longer offers its lane", body: `{"lanes":["flex"],"input":{"messages":[{"role":"user","content":"hello"}]}}`,
			before: routes(withFlex), after: routes(cheap), status: http.StatusBadRequest, code: wire.CodeInvalidRequest, field: "lanes"},
		{name: "the budget is below the route's new worst case", body: simpleBody,
			before: routes(cheap), after: routes(dear), status: http.StatusBadRequest, code: wire.CodeInvalidRequest, field: "budget_cents"},
		{name: "the model is no longer offered", body: `{"model":"other","input":{"messages":[{"role":"user","content":"hello"}]}}`,
			before: routes(cheap), after: routes(cheap), limitsBefore: both,
			status: http.StatusBadRequest, code: wire.CodeInvalidRequest, field: "model"},
		{name: "the route's model refuses the option now", body: `{"input":{"messages":[{"role":"user","content":"hello"}],"temperature":0.2}}`,
			before: routes(cheap), after: routes(fixed), status: http.StatusUnprocessableEntity, code: wire.CodeOptionUnsupported, field: "input.temperature"},
		{name: "the route's model no longer takes top_p", body: `{"input":{"messages":[{"role":"user","content":"hello"}],"top_p":0.5}}`,
			before: routes(takesTopP), after: routes(cheap), status: http.StatusUnprocessableEntity, code: wire.CodeOptionUnsupported, field: "input.top_p"},
		{name: "a limit was lowered", body: `{"max_attempts":6,"input":{"messages":[{"role":"user","content":"hello"}]}}`,
			before: routes(cheap), after: routes(cheap), limitsAfter: func(l *job.Limits) { l.MaxMaxAttempts, l.DefaultMaxAttempts = 4, 2 },
			status: http.StatusBadRequest, code: wire.CodeInvalidRequest, field: "max_attempts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.h = e.withConfig(tc.before, tc.limitsBefore)
			first := e.do(t, createReq(t, "k-1", tc.body))
			if first.StatusCode != http.StatusAccepted {
				t.Fatalf("first create: %d %s", first.StatusCode, first.Body)
			}
			id := decodeView(t, first).ID
			sends := e.queue.count()

			e.h = e.withConfig(tc.after, tc.limitsAfter)
			resp := e.do(t, createReq(t, "k-1", tc.body))
			if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" || decodeView(t, resp).ID != id {
				t.Fatalf("retry: %d %v %s, want 200 replayed of %s", resp.StatusCode, resp.Headers, resp.Body, id)
			}
			if resp.Headers["Location"] != "/jobs/"+id {
				t.Errorf("retry Location = %q", resp.Headers["Location"])
			}
			// Still queued with no attempts: the repeat re-sends, as any repeat does.
			if e.queue.count() != sends+1 {
				t.Errorf("sends %d after the retry, want %d", e.queue.count(), sends+1)
			}
			wantProblem(t, e.do(t, createReq(t, "k-2", tc.body)), tc.status, tc.code, tc.field)
			if e.store.Len() != 1 {
				t.Fatalf("%d records, want 1", e.store.Len())
			}
		})
	}
}

// withConfig is a handler over the env's store, queue and clock with
// routes and the default limits changed by limits (nil: unchanged).
func (e *env) withConfig(routes map[string]job.Route, limits func(*job.Limits)) *Handler {
	s := settings.Defaults()
	if limits != nil {
		limits(&s.Limits)
	}
	return New(Config{Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: routes, Callbacks: testCallbacks, Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
}
