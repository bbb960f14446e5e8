package api

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

// A temperature an OpenAI reasoning model refuses (any but 1) is refused
// at create, naming the option and the rung, with nothing recorded or
// sent: sent, the provider would answer 400 unsupported_value and the job
// would end failed and its input quarantined. The default (no
// temperature) and 1 are accepted, and a job whose lanes keep it off the
// refusing rung is not refused for it.
func TestAnOptionARungsModelRefusesIsRefusedAtCreate(t *testing.T) {
	e := newEnv(t)
	s := settings.Defaults()
	plain := job.Rung{Provider: "oa", Model: "gpt-4o-mini", Price: job.Price{InputPerToken: 1, OutputPerToken: 2}, Timeout: time.Minute}
	reasoning := plain
	reasoning.Model, reasoning.FixedTemperature = "o4-mini", true
	flexOnly := plain
	flexOnly.Lanes = []job.Rung{{Provider: "oa", Model: "gpt-4o-mini", Lane: job.Flex, Price: plain.Price, Base: plain.Price, Timeout: time.Minute}}
	routes := map[string]job.Route{
		"default": {Rungs: []job.Rung{plain, reasoning}, FallbackOn: []job.ErrorClass{job.Timeout}},
		"laned":   {Rungs: []job.Rung{flexOnly, reasoning}, FallbackOn: []job.ErrorClass{job.Timeout}},
	}
	s.Limits.Models = []string{"default", "laned"}
	e.h = New(Config{Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: routes, Callbacks: testCallbacks, Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})

	in := func(extra string) string {
		return `{"input":{"messages":[{"role":"user","content":"hello"}]` + extra + `}`
	}
	resp := e.do(t, createReq(t, "refused", in(`,"temperature":0.2}`)))
	p := wantProblem(t, resp, http.StatusUnprocessableEntity, wire.CodeOptionUnsupported, "input.temperature")
	if !strings.Contains(p.Detail, "o4-mini") || !strings.Contains(p.Detail, "rung 1") {
		t.Errorf("detail %q names neither the rung nor its model", p.Detail)
	}
	if e.store.Len() != 0 {
		t.Fatalf("a refused create left %d records", e.store.Len())
	}
	for key, body := range map[string]string{"none": in(`}`), "one": in(`,"temperature":1}`)} {
		if resp := e.do(t, createReq(t, key, body)); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s: status %d, body %s", key, resp.StatusCode, resp.Body)
		}
	}
	// Only flex is allowed: the reasoning rung offers no flex lane, so the
	// job never reaches it.
	body := `{"model":"laned","lanes":["flex"],"input":{"messages":[{"role":"user","content":"hello"}],"temperature":0.2}}`
	if resp := e.do(t, createReq(t, "laned", body)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("a job kept off the refusing rung: status %d, body %s", resp.StatusCode, resp.Body)
	}
}

// A model that refuses any temperature (Claude Opus 4.7) refuses 1 too.
func TestARungWithoutTemperatureRefusesEvenTheDefault(t *testing.T) {
	e := newEnv(t)
	s := settings.Defaults()
	opus := job.Rung{Provider: "an", Model: "claude-opus-4-7", Price: job.Price{InputPerToken: 5, OutputPerToken: 25}, Timeout: time.Minute, NoTemperature: true}
	e.h = New(Config{Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: map[string]job.Route{"default": {Rungs: []job.Rung{opus}}}, Callbacks: testCallbacks,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	resp := e.do(t, createReq(t, "one", `{"input":{"messages":[{"role":"user","content":"hello"}],"temperature":1}}`))
	if p := wantProblem(t, resp, http.StatusUnprocessableEntity, wire.CodeOptionUnsupported, "input.temperature"); !strings.Contains(p.Detail, "no temperature at all") {
		t.Errorf("detail %q", p.Detail)
	}
	if resp := e.do(t, createReq(t, "none", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("without a temperature: status %d, body %s", resp.StatusCode, resp.Body)
	}
}

// Each sampling and reasoning option is refused at create with 422
// option_unsupported, naming the option and the rung, when a rung of the
// route cannot honour it, with nothing recorded or enqueued; the same
// body on a route whose rungs take it is accepted.
func TestEachOptionARungCannotHonourIsRefusedAtCreate(t *testing.T) {
	price := job.Price{InputPerToken: 1, OutputPerToken: 2}
	rung := func(provider, model string, takes job.Takes) job.Rung {
		return job.Rung{Provider: provider, Model: model, Price: price, Timeout: time.Minute, Takes: takes}
	}
	all := rung("fk", "fake", job.Takes{TopP: true, Stop: true, Seed: true, Effort: true, Budget: true})
	chat := rung("oa", "gpt-4o-mini", job.Takes{TopP: true, Stop: true, Seed: true})
	o4 := rung("oa", "o4-mini", job.Takes{TopP: true, Seed: true, Effort: true, ReasoningTopP: 1})
	o4.FixedTemperature = true
	claude := rung("an", "claude-sonnet-4-5", job.Takes{TopP: true, Stop: true, Budget: true, TemperatureOrTopP: true, ReasoningTopP: 0.95})
	retry := []job.ErrorClass{job.Timeout}
	routes := map[string]job.Route{
		"open":   {Rungs: []job.Rung{all}},
		"chat":   {Rungs: []job.Rung{all, chat}, FallbackOn: retry},
		"o4":     {Rungs: []job.Rung{all, o4}, FallbackOn: retry},
		"claude": {Rungs: []job.Rung{all, claude}, FallbackOn: retry},
	}
	e := newEnv(t)
	s := settings.Defaults()
	s.Limits.Models = []string{"open", "chat", "o4", "claude"}
	e.h = New(Config{Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: routes, Callbacks: testCallbacks, Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	body := func(route, options string) string {
		return `{"model":"` + route + `","input":{"messages":[{"role":"user","content":"hello"}],"max_tokens":4096` + options + `}}`
	}
	for _, tt := range []struct {
		route, options, field, rung string
	}{
		{"chat", `,"reasoning":{"effort":"low"}`, "input.reasoning", "oa/gpt-4o-mini"},
		{"o4", `,"stop":["END"]`, "input.stop", "oa/o4-mini"},
		{"o4", `,"top_p":0.5`, "input.top_p", "oa/o4-mini"},
		{"o4", `,"reasoning":{"budget_tokens":2048}`, "input.reasoning.effort", "oa/o4-mini"},
		{"claude", `,"seed":7`, "input.seed", "an/claude-sonnet-4-5"},
		{"claude", `,"temperature":0.5,"top_p":0.9`, "input.top_p", "an/claude-sonnet-4-5"},
		{"claude", `,"reasoning":{"effort":"high"}`, "input.reasoning.budget_tokens", "an/claude-sonnet-4-5"},
		{"claude", `,"reasoning":{"budget_tokens":2048},"top_p":0.9`, "input.top_p", "an/claude-sonnet-4-5"},
	} {
		t.Run(tt.route+tt.options, func(t *testing.T) {
			sends := e.queue.count()
			resp := e.do(t, createReq(t, "refused-"+tt.route+tt.options, body(tt.route, tt.options)))
			p := wantProblem(t, resp, http.StatusUnprocessableEntity, wire.CodeOptionUnsupported, tt.field)
			if !strings.Contains(p.Detail, "rung 1 ("+tt.rung+")") || !strings.Contains(p.Detail, tt.route) {
				t.Errorf("detail %q names neither the route nor rung 1 (%s)", p.Detail, tt.rung)
			}
			if e.store.Len() != 0 || e.queue.count() != sends {
				t.Fatalf("a refused create left %d records and sent %d", e.store.Len(), e.queue.count()-sends)
			}
		})
	}
	for _, tt := range []struct{ route, options string }{
		{"open", `,"top_p":0.5,"stop":["END"],"seed":7,"reasoning":{"effort":"low","budget_tokens":2048}`},
		{"chat", `,"temperature":0.5,"top_p":0.5,"stop":["END"],"seed":7`},
		{"o4", `,"top_p":1,"seed":7,"reasoning":{"effort":"high"}`},
		{"claude", `,"top_p":0.95,"stop":["END"],"reasoning":{"effort":"high","budget_tokens":2048}`},
	} {
		if resp := e.do(t, createReq(t, "taken-"+tt.route, body(tt.route, tt.options))); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s%s: status %d, body %s", tt.route, tt.options, resp.StatusCode, resp.Body)
		}
	}
}

// The input hash covers the options: the same key with another top_p is
// another body (422 idempotency_key_reused), the same options in another
// order are the same one (200, replayed).
func TestTheInputHashCoversTheOptions(t *testing.T) {
	e := newEnv(t)
	routes := map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "fk", Model: "fake", Price: job.Price{InputPerToken: 1, OutputPerToken: 2},
		Timeout: time.Minute, Takes: job.Takes{TopP: true, Stop: true, Seed: true, Effort: true, Budget: true}}}}}
	e.h = e.withConfig(routes, nil)
	in := func(options string) string {
		return `{"input":{"messages":[{"role":"user","content":"hello"}]` + options + `}}`
	}
	first := e.do(t, createReq(t, "k", in(`,"top_p":0.5,"seed":1`)))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	hash := decodeView(t, first).InputHash
	for _, options := range []string{`,"top_p":0.6,"seed":1`, `,"top_p":0.5,"seed":2`, `,"top_p":0.5,"seed":1,"stop":["x"]`,
		`,"top_p":0.5,"seed":1,"reasoning":{"effort":"low"}`} {
		wantProblem(t, e.do(t, createReq(t, "k", in(options))), http.StatusUnprocessableEntity, wire.CodeKeyReused, "Idempotency-Key")
		other := e.do(t, createReq(t, "other"+options, in(options)))
		if other.StatusCode != http.StatusAccepted || decodeView(t, other).InputHash == hash {
			t.Errorf("%s: status %d, input hash %s the same as top_p 0.5 seed 1's", options, other.StatusCode, hash)
		}
	}
	again := e.do(t, createReq(t, "k", in(`,"seed":1,"top_p":0.5`)))
	if again.StatusCode != http.StatusOK || again.Headers["Idempotent-Replayed"] != "true" || decodeView(t, again).InputHash != hash {
		t.Fatalf("the same options reordered: %d %v %s", again.StatusCode, again.Headers, again.Body)
	}
}
