package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// optionsCase is one route of TestSamplingAndReasoningOptionsEndToEnd:
// a model behind its own fake, the options a job asks of it, and the
// members its provider's body must then carry.
type optionsCase struct {
	name, entry, model, options string
	want                        map[string]string // body member -> its JSON

	mu     sync.Mutex
	bodies []map[string]json.RawMessage
}

// serve starts h behind a recorder of the bodies POSTed to it.
func (c *optionsCase) serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			var m map[string]json.RawMessage
			_ = json.Unmarshal(b, &m)
			c.mu.Lock()
			c.bodies = append(c.bodies, m)
			c.mu.Unlock()
			r.Body = io.NopCloser(strings.NewReader(string(b)))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSamplingAndReasoningOptionsEndToEnd: through the whole stack on the
// emulator, a job's top_p, stop, seed and reasoning reach OpenAI's chat
// body, Anthropic's Messages body and Bedrock's Converse body under each
// provider's own names, and each job succeeds against a fake that
// refuses what its provider refuses; a job setting an option a rung of
// its route cannot honour is refused at create, 422 option_unsupported
// naming the option and the rung, and nothing reaches a provider (issue N
// item 4).
func TestSamplingAndReasoningOptionsEndToEnd(t *testing.T) {
	t.Parallel()
	cases := []*optionsCase{
		{name: "chat", entry: "openai", model: "gpt-4o-mini", options: `"top_p": 0.5, "stop": ["END"], "seed": 7`,
			want: map[string]string{"top_p": "0.5", "stop": `["END"]`, "seed": "7"}},
		{name: "reasoning", entry: "openai", model: "o4-mini", options: `"top_p": 1, "reasoning": {"effort": "low"}`,
			want: map[string]string{"top_p": "1", "reasoning_effort": `"low"`}},
		{name: "claude", entry: "anthropic", model: "claude-sonnet-4-5", options: `"top_p": 0.96, "stop": ["END"], "reasoning": {"budget_tokens": 1024}`,
			want: map[string]string{"top_p": "0.96", "stop_sequences": `["END"]`, "thinking": `{"type":"enabled","budget_tokens":1024}`}},
		{name: "bedrock", entry: "bedrock", model: "us.anthropic.claude-haiku-4-5-20251001-v1:0", options: `"stop": ["END"], "reasoning": {"budget_tokens": 1024}`,
			want: map[string]string{"additionalModelRequestFields": `{"thinking":{"budget_tokens":1024,"type":"enabled"}}`}},
	}
	entries, routes := optionsStack(t, cases)
	routes = append(routes, `"default": {"rungs": [{"provider": "chat", "model": "gpt-4o-mini", "price": {"input": 100, "output": 400}, "timeout": "5s"}]}`,
		`"mixed": {"rungs": [{"provider": "chat", "model": "gpt-4o-mini", "price": {"input": 100, "output": 400}, "timeout": "5s"},
		                     {"provider": "claude", "model": "claude-sonnet-4-5", "price": {"input": 100, "output": 400}, "timeout": "5s"}],
		           "fallback_on": ["rate_limited"]}`)
	doc := `{"providers": {` + strings.Join(entries, ",\n") + `}, "routes": {` + strings.Join(routes, ",\n") + `}}`
	// The mixed route's two rungs take 10 s, which the worker's timeout must hold.
	overrides := map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_WORKER_TIMEOUT": "15s", "AIJOBS_VISIBILITY_TIMEOUT": "16s"}
	for k, v := range steadyLease {
		overrides[k] = v
	}
	s := startStackWith(t, overrides, false)

	body := func(route, options string) string {
		return fmt.Sprintf(`{"model": %q, "input": {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 2048, %s}}`, route, options)
	}
	// A seed on a route whose second rung is Claude's: refused before
	// anything is written or sent.
	r, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "opt-refused"}, body("mixed", `"seed": 7`))
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "option_unsupported" || r.body["field"] != "input.seed" ||
		!strings.Contains(fmt.Sprint(r.body["detail"]), "rung 1 (claude/claude-sonnet-4-5)") {
		t.Fatalf("a seed on a Claude rung: %d %s, want 422 option_unsupported on input.seed naming rung 1", r.status, r.raw)
	}

	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = s.submit("t", "opt-"+c.name, body(c.name, c.options))
	}
	awaitAll(t, s, ids, 30*time.Second)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := s.get("t", ids[i]).body; v["state"] != "succeeded" {
				t.Fatalf("job %s: %v (%v)", ids[i], v["state"], v["error_class"])
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.bodies) != 1 {
				t.Fatalf("the fake was sent %d calls, want 1", len(c.bodies))
			}
			got := c.bodies[0]
			if c.entry == "bedrock" {
				var ic map[string]json.RawMessage
				_ = json.Unmarshal(got["inferenceConfig"], &ic)
				if string(ic["stopSequences"]) != `["END"]` {
					t.Errorf("inferenceConfig %s: want stopSequences [END]", got["inferenceConfig"])
				}
			}
			for member, want := range c.want {
				if string(got[member]) != want {
					t.Errorf("%s = %s, want %s", member, got[member], want)
				}
			}
		})
	}
}

// optionsStack serves each case's provider fake (a plain OpenAI server,
// a streaming Anthropic one, a streaming Bedrock one) and answers the
// AIJOBS_ROUTES provider entries and the route of one rung a case, both
// named after the case.
func optionsStack(t *testing.T, cases []*optionsCase) (entries, routes []string) {
	for _, c := range cases {
		var url, entry string
		switch c.entry {
		case "openai":
			url = c.serve(t, (&openaitest.Server{}).Handler())
			entry = fmt.Sprintf(`{"kind": "openai", "base_url": %q, "stream": false}`, url)
		case "anthropic":
			url = c.serve(t, (&anthropictest.Server{}).Handler())
			entry = fmt.Sprintf(`{"kind": "anthropic", "base_url": %q, "stream": true}`, url)
		default:
			url = c.serve(t, bedrocktest.New(nil).Handler())
			entry = fmt.Sprintf(`{"kind": "bedrock", "region": "us-east-1", "endpoint": %q, "stream": true}`, url)
		}
		entries = append(entries, fmt.Sprintf("%q: %s", c.name, entry))
		routes = append(routes, fmt.Sprintf(`%q: {"rungs": [{"provider": %q, "model": %q, "price": {"input": 100, "output": 400}, "timeout": "5s"}]}`,
			c.name, c.name, c.model))
	}
	return entries, routes
}
