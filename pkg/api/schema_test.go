package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// schemaBody is a create body whose input asks for format (a
// response_format's JSON) on route, beside extra input members.
func schemaBody(route, format, extra string) string {
	return `{"model":"` + route + `","input":{"messages":[{"role":"user","content":"hello"}],"max_tokens":4096,"response_format":` + format + extra + `}}`
}

const personFormat = `{"type":"json_schema","json_schema":{"name":"person","strict":true,
	"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}}`

// A response_format that is not a portable json_schema is a 400
// invalid_request naming the member at fault, with nothing recorded.
func TestABadResponseFormatIsRefusedAtCreate(t *testing.T) {
	e := newEnv(t)
	routes := map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "fk", Model: "fake", Price: job.Price{InputPerToken: 1, OutputPerToken: 2},
		Timeout: time.Minute, Takes: job.Takes{ResponseFormat: true}}}}}
	e.h = e.withConfig(routes, nil)
	for _, tt := range []struct {
		name, format, field string
	}{
		{"json_object", `{"type":"json_object"}`, "input.response_format.type"},
		{"a member in capitals", `{"type":"json_schema","JSON_SCHEMA":{"name":"p","schema":{"type":"object"}}}`, "input.response_format.JSON_SCHEMA"},
		{"an unknown json_schema member", `{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object"},"description":"x"}}`, "input.response_format.json_schema.description"},
		{"a schema of the wrong type", `{"type":"json_schema","json_schema":{"name":"p","schema":"object"}}`, "input.response_format.json_schema.schema"},
		{"a schema that does not compile", `{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","required":"name"}}}`, "input.response_format.json_schema.schema"},
		{"a bad name", `{"type":"json_schema","json_schema":{"name":"a person","schema":{"type":"object"}}}`, "input.response_format.json_schema.name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, e.do(t, createReq(t, tt.name, schemaBody("default", tt.format, ""))), http.StatusBadRequest, wire.CodeInvalidRequest, tt.field)
			if !strings.Contains(p.Detail, "response_format") && !strings.Contains(p.Detail, "schema") && !strings.Contains(p.Detail, tt.field) {
				t.Errorf("detail %q says nothing of the response_format", p.Detail)
			}
		})
	}
	if e.store.Len() != 0 {
		t.Fatalf("refused creates left %d records", e.store.Len())
	}
	if resp := e.do(t, createReq(t, "good", schemaBody("default", personFormat, ""))); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a good response_format: %d %s", resp.StatusCode, resp.Body)
	}
}

// A route with a rung that cannot carry a response_format, or a Claude
// rung (a forced tool) given a thinking budget, refuses the job with 422
// option_unsupported naming the option and the rung; the format alone on
// the Claude rung, and the budget alone, are taken.
func TestAResponseFormatARungCannotHonourIsRefusedAtCreate(t *testing.T) {
	e := newEnv(t)
	price := job.Price{InputPerToken: 1, OutputPerToken: 2}
	openai := job.Rung{Provider: "oa", Model: "gpt-4o", Price: price, Timeout: time.Minute, Takes: job.Takes{ResponseFormat: true}}
	old := job.Rung{Provider: "oa", Model: "gpt-4-turbo", Price: price, Timeout: time.Minute}
	claude := job.Rung{Provider: "an", Model: "claude-sonnet-4-5", Price: price, Timeout: time.Minute,
		Takes: job.Takes{Budget: true, ResponseFormat: true, ForcedTool: true, ReasoningTopP: 0.95}}
	routes := map[string]job.Route{
		"old":    {Rungs: []job.Rung{openai, old}, FallbackOn: []job.ErrorClass{job.Timeout}},
		"claude": {Rungs: []job.Rung{claude}},
	}
	e.h = e.withConfig(routes, func(l *job.Limits) { l.Models = []string{"old", "claude"} })
	p := wantProblem(t, e.do(t, createReq(t, "old", schemaBody("old", personFormat, ""))), http.StatusUnprocessableEntity,
		wire.CodeOptionUnsupported, "input.response_format")
	if !strings.Contains(p.Detail, "rung 1 (oa/gpt-4-turbo)") {
		t.Errorf("detail %q does not name the rung", p.Detail)
	}
	budget := `,"reasoning":{"budget_tokens":2048}`
	p = wantProblem(t, e.do(t, createReq(t, "thinking", schemaBody("claude", personFormat, budget))), http.StatusUnprocessableEntity,
		wire.CodeOptionUnsupported, "input.response_format")
	if !strings.Contains(p.Detail, "rung 0 (an/claude-sonnet-4-5)") || !strings.Contains(p.Detail, "thinking budget") {
		t.Errorf("detail %q names neither the rung nor the thinking budget", p.Detail)
	}
	if e.store.Len() != 0 {
		t.Fatalf("refused creates left %d records", e.store.Len())
	}
	if resp := e.do(t, createReq(t, "format", schemaBody("claude", personFormat, ""))); resp.StatusCode != http.StatusAccepted {
		t.Errorf("the format alone on Claude: %d %s", resp.StatusCode, resp.Body)
	}
	body := `{"model":"claude","input":{"messages":[{"role":"user","content":"hello"}],"max_tokens":4096` + budget + `}}`
	if resp := e.do(t, createReq(t, "budget", body)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("the budget alone on Claude: %d %s", resp.StatusCode, resp.Body)
	}
}

// The input hash covers the response_format: another schema is another
// body for the same key; the same schema with its members reordered is
// the same one.
func TestTheInputHashCoversTheResponseFormat(t *testing.T) {
	e := newEnv(t)
	routes := map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "fk", Model: "fake", Price: job.Price{InputPerToken: 1, OutputPerToken: 2},
		Timeout: time.Minute, Takes: job.Takes{ResponseFormat: true}}}}}
	e.h = e.withConfig(routes, nil)
	first := e.do(t, createReq(t, "k", schemaBody("default", personFormat, "")))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	other := strings.Replace(personFormat, `"required":["name"]`, `"required":[]`, 1)
	wantProblem(t, e.do(t, createReq(t, "k", schemaBody("default", other, ""))), http.StatusUnprocessableEntity, wire.CodeKeyReused, "Idempotency-Key")
	reordered := `{"json_schema":{"schema":{"additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string"}},"type":"object"},
		"strict":true,"name":"person"},"type":"json_schema"}`
	again := e.do(t, createReq(t, "k", schemaBody("default", reordered, "")))
	if again.StatusCode != http.StatusOK || decodeView(t, again).InputHash != decodeView(t, first).InputHash {
		t.Fatalf("the same format reordered: %d %s", again.StatusCode, again.Body)
	}
}
