package config_test

import (
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

// Each rung carries its model family's rules: which take no temperature
// but 1, and what the provider bills for prompt-cache reads and writes
// (shares of the input price from the providers' price pages, rounded
// up), unless the rung's price states them.
func TestARungCarriesItsModelFamilysRules(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"http://x"},"an":{"kind":"anthropic"},"br":{"kind":"bedrock"}},
	  "routes":{"default":{"rungs":[
	    {"provider":"oa","model":"gpt-5-mini","price":{"input":25,"output":200},"timeout":"10s"},
	    {"provider":"oa","model":"o4-mini","price":{"input":110,"output":440},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-4o-mini","price":{"input":15,"output":60},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-5.1","price":{"input":125,"output":1000},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-5-chat-latest","price":{"input":125,"output":1000},"timeout":"10s"},
	    {"provider":"oa","model":"my-local-model","price":{"input":10,"output":10},"timeout":"10s"},
	    {"provider":"an","model":"claude-sonnet-4-5","price":{"input":300,"output":1500},"timeout":"10s"},
	    {"provider":"br","model":"us.anthropic.claude-haiku-4-5-20251001-v1:0","price":{"input":100,"output":500},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-4.1","price":{"input":200,"output":800,"cached_input":"7.5","cache_write":300},"timeout":"10s"}
	  ],"fallback_on":["timeout"]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	perM := func(cents string) job.Nanocents { return price(t, cents, "0").InputPerToken }
	want := []struct {
		fixed       bool
		read, write job.Nanocents
	}{
		{true, perM("2.5"), 0},            // gpt-5 family: 10%, writes at the input price
		{true, perM("27.5"), 0},           // o4-mini: 25%
		{false, perM("7.5"), 0},           // gpt-4o family: 50%
		{false, perM("12.5"), 0},          // gpt-5.1: temperature accepted at effort none
		{false, perM("12.5"), 0},          // gpt-5-chat
		{false, 0, 0},                     // unknown: the input price for both
		{false, perM("30"), perM("375")},  // Anthropic: 0.1x and 1.25x
		{false, perM("10"), perM("125")},  // Claude on Bedrock, inference profile prefix
		{false, perM("7.5"), perM("300")}, // stated by the rung
	}
	for i, g := range c.Routes["default"].Rungs {
		w := want[i]
		if w.write == 0 && g.Price.CacheWritePerToken != 0 && g.Price.CacheWritePerToken != g.Price.InputPerToken {
			t.Errorf("%s: cache write %d, want the input price", g.Model, g.Price.CacheWritePerToken)
		}
		if g.Reasons != w.fixed {
			t.Errorf("%s: reasons %v, want %v (the same family)", g.Model, g.Reasons, w.fixed)
		}
		if g.FixedTemperature != w.fixed || g.Price.CachedInputPerToken != w.read || w.write != 0 && g.Price.CacheWritePerToken != w.write {
			t.Errorf("%s: fixed temperature %v, cached %d, write %d; want %v, %d, %d",
				g.Model, g.FixedTemperature, g.Price.CachedInputPerToken, g.Price.CacheWritePerToken, w.fixed, w.read, w.write)
		}
	}
}

// An openai entry sends its output cap as max_completion_tokens unless
// it says max_tokens (a server that knows only the old name); any other
// word, or the field on another kind, is refused at start.
func TestMaxTokensField(t *testing.T) {
	doc := func(p string) string {
		return `{"providers":{"p":` + p + `},"routes":{"default":{"rungs":[{"provider":"p","model":"m","price":{"input":1,"output":2}}]}}}`
	}
	for field, want := range map[string]string{"": "", `,"max_tokens_field":"max_tokens"`: config.MaxTokens, `,"max_tokens_field":"max_completion_tokens"`: config.MaxCompletionTokens} {
		c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc(`{"kind":"openai","base_url":"http://x"` + field + `}`)}))
		if err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		if got := c.Providers["p"].MaxTokensField; got != want {
			t.Errorf("%s: field %q, want %q", field, got, want)
		}
	}
	for p, wantErr := range map[string]string{
		`{"kind":"openai","base_url":"http://x","max_tokens_field":"limit"}`: "max_tokens_field",
		`{"kind":"anthropic","max_tokens_field":"max_tokens"}`:               "for openai",
	} {
		if _, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc(p)})); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: err %v, want one naming %q", p, err, wantErr)
		}
	}
}

// Claude Opus 4.7 and later refuse any temperature, on Anthropic's API
// and on Bedrock; earlier Claude models take one.
func TestClaudeOpus47TakesNoTemperature(t *testing.T) {
	doc := `{"providers":{"an":{"kind":"anthropic"},"br":{"kind":"bedrock"}},
	  "routes":{"default":{"rungs":[
	    {"provider":"an","model":"claude-opus-4-7","price":{"input":500,"output":2500},"timeout":"10s"},
	    {"provider":"br","model":"global.anthropic.claude-opus-4-7-v1:0","price":{"input":500,"output":2500},"timeout":"10s"},
	    {"provider":"an","model":"claude-opus-4-8-20260601","price":{"input":500,"output":2500},"timeout":"10s"},
	    {"provider":"an","model":"claude-opus-4-6","price":{"input":500,"output":2500},"timeout":"10s"},
	    {"provider":"an","model":"claude-sonnet-4-7","price":{"input":300,"output":1500},"timeout":"10s"},
	    {"provider":"br","model":"anthropic.claude-opus-4-1-20250805-v1:0","price":{"input":1500,"output":7500},"timeout":"10s"}
	  ],"fallback_on":["timeout"]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range c.Routes["default"].Rungs {
		if want := i < 3; g.NoTemperature != want || g.FixedTemperature {
			t.Errorf("%s: no temperature %v, fixed %v; want %v, false", g.Model, g.NoTemperature, g.FixedTemperature, want)
		}
	}
}

// Each rung carries the input options its provider and model family
// honour (docs/providers.md, "Sampling and reasoning options").
func TestARungTakesTheOptionsItsFamilyHonours(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"http://x"},"bg":{"kind":"openai","base_url":"http://x","background":true},
	    "an":{"kind":"anthropic"},"br":{"kind":"bedrock"},"fk":{"kind":"fake"}},
	  "routes":{"default":{"rungs":[
	    {"provider":"oa","model":"gpt-4o-mini","price":{"input":15,"output":60},"timeout":"10s"},
	    {"provider":"oa","model":"o4-mini","price":{"input":110,"output":440},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-5.1","price":{"input":125,"output":1000},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-5-chat-latest","price":{"input":125,"output":1000},"timeout":"10s"},
	    {"provider":"bg","model":"gpt-5-mini","price":{"input":25,"output":200},"timeout":"10s"},
	    {"provider":"an","model":"claude-sonnet-4-5","price":{"input":300,"output":1500},"timeout":"10s"},
	    {"provider":"an","model":"claude-3-5-haiku-20241022","price":{"input":80,"output":400},"timeout":"10s"},
	    {"provider":"an","model":"claude-opus-4-7","price":{"input":500,"output":2500},"timeout":"10s"},
	    {"provider":"br","model":"us.anthropic.claude-3-7-sonnet-20250219-v1:0","price":{"input":300,"output":1500},"timeout":"10s"},
	    {"provider":"br","model":"amazon.nova-pro-v1:0","price":{"input":80,"output":320},"timeout":"10s"},
	    {"provider":"fk","model":"fake","price":{"input":1,"output":1},"timeout":"10s"}
	  ],"fallback_on":["timeout"]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	// Every rung here takes a response_format (pkg/config/schema.go):
	// Anthropic's and Bedrock's as a forced tool.
	chat := job.Takes{TopP: true, Stop: true, Seed: true, ResponseFormat: true}
	reasoning := job.Takes{TopP: true, Seed: true, Effort: true, ReasoningTopP: 1, ResponseFormat: true}
	want := []job.Takes{
		chat,      // gpt-4o-mini
		reasoning, // o4-mini: no stop
		reasoning, // gpt-5.1 reasons when asked
		chat,      // gpt-5-chat does not reason
		{TopP: true, Effort: true, ReasoningTopP: 1, ResponseFormat: true},                                                           // the Responses API has no stop, no seed
		{TopP: true, Stop: true, Budget: true, TemperatureOrTopP: true, ReasoningTopP: 0.95, ResponseFormat: true, ForcedTool: true}, // Claude 4.x
		{TopP: true, Stop: true, ResponseFormat: true, ForcedTool: true},                                                             // Claude 3.5 neither thinks nor minds top_p with temperature
		{TopP: true, Stop: true, TemperatureOrTopP: true, ResponseFormat: true, ForcedTool: true},                                    // Opus 4.7 refuses a thinking budget
		{TopP: true, Stop: true, Budget: true, ReasoningTopP: 0.95, ResponseFormat: true, ForcedTool: true},                          // Claude 3.7 on Bedrock
		{TopP: true, Stop: true, ResponseFormat: true, ForcedTool: true},                                                             // Nova: no thinking
		{TopP: true, Stop: true, Seed: true, Effort: true, Budget: true, ResponseFormat: true},                                       // the fake takes all
	}
	for i, g := range c.Routes["default"].Rungs {
		got := g.Takes
		got.Images, got.Documents = false, false // TestARungReadsThePartsItsModelReads
		if got != want[i] {
			t.Errorf("%s/%s: takes %+v, want %+v", g.Provider, g.Model, g.Takes, want[i])
		}
	}
}

// A rung takes a response_format where its provider documents a way to
// carry it for its model (pkg/config/schema.go): OpenAI's models from
// Structured Outputs on, Claude on both its wires, Nova on Bedrock; not
// the older OpenAI models nor Bedrock's other models.
func TestARungTakesAResponseFormatWhereItsModelCarriesOne(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"http://x"},"br":{"kind":"bedrock"}},
	  "routes":{"default":{"rungs":[
	    {"provider":"oa","model":"gpt-4o-2024-08-06","price":{"input":1,"output":1},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-4-turbo","price":{"input":1,"output":1},"timeout":"10s"},
	    {"provider":"oa","model":"gpt-3.5-turbo","price":{"input":1,"output":1},"timeout":"10s"},
	    {"provider":"oa","model":"o1-mini","price":{"input":1,"output":1},"timeout":"10s"},
	    {"provider":"br","model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","price":{"input":1,"output":1},"timeout":"10s"},
	    {"provider":"br","model":"meta.llama3-70b-instruct-v1:0","price":{"input":1,"output":1},"timeout":"10s"}
	  ],"fallback_on":["timeout"]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, false, false, true, false}
	for i, g := range c.Routes["default"].Rungs {
		if g.Takes.ResponseFormat != want[i] || g.Takes.ForcedTool != (want[i] && g.Provider == "br") {
			t.Errorf("%s/%s: takes a response_format %v (forced tool %v), want %v", g.Provider, g.Model, g.Takes.ResponseFormat, g.Takes.ForcedTool, want[i])
		}
	}
}

// A route may fall back on invalid_output: a provider call ends with it.
func TestARouteMayFallBackOnInvalidOutput(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"http://x"},"an":{"kind":"anthropic"}},
	  "routes":{"default":{"rungs":[
	    {"provider":"oa","model":"gpt-4o-mini","price":{"input":15,"output":60},"timeout":"10s"},
	    {"provider":"an","model":"claude-sonnet-4-5","price":{"input":300,"output":1500},"timeout":"10s"}
	  ],"fallback_on":["invalid_output"]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Routes["default"]; !r.FallsBackOn(job.InvalidOutput) {
		t.Fatalf("fallback_on %v, want invalid_output", r.FallbackOn)
	}
}
