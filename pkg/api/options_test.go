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
