package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// schemaFormat is the response_format every job of
// TestStructuredOutputEndToEnd asks for.
const schemaFormat = `{"type": "json_schema", "json_schema": {"name": "summary", "strict": true, "schema": {"type": "object",
	"properties": {"title": {"type": "string", "minLength": 3}, "pages": {"type": "integer", "minimum": 1},
	"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}},
	"required": ["title", "pages", "tags"], "additionalProperties": false}}}`

// TestStructuredOutputEndToEnd: through the whole stack on the emulator,
// a job with a JSON Schema response_format succeeds on each provider
// kind's fake (OpenAI's chat completions, Anthropic's Messages streamed,
// Bedrock's ConverseStream), each answer the JSON the schema accepts; and
// a fake made to answer JSON the schema refuses ends the job
// invalid_output after its attempts, every answer's cost on the record
// (issue 39 item 3).
func TestStructuredOutputEndToEnd(t *testing.T) {
	t.Parallel()
	bad := &openaitest.Server{Nonconforming: true}
	entries := map[string]string{
		"chat":    fmt.Sprintf(`{"kind": "openai", "base_url": %q, "stream": false}`, serve(t, (&openaitest.Server{}).Handler())),
		"claude":  fmt.Sprintf(`{"kind": "anthropic", "base_url": %q, "stream": true}`, serve(t, (&anthropictest.Server{}).Handler())),
		"bedrock": fmt.Sprintf(`{"kind": "bedrock", "region": "us-east-1", "endpoint": %q, "stream": true}`, serve(t, bedrocktest.New(nil).Handler())),
		"bad":     fmt.Sprintf(`{"kind": "openai", "base_url": %q, "stream": false}`, serve(t, bad.Handler())),
	}
	models := map[string]string{"chat": "gpt-4o-mini", "claude": "claude-sonnet-4-5", "bedrock": "us.anthropic.claude-haiku-4-5-20251001-v1:0", "bad": "gpt-4o-mini"}
	var providers, routes []string
	for name, entry := range entries {
		providers = append(providers, fmt.Sprintf("%q: %s", name, entry))
		routes = append(routes, fmt.Sprintf(`%q: {"rungs": [{"provider": %q, "model": %q, "price": {"input": 100, "output": 400}, "timeout": "5s"}]}`,
			name, name, models[name]))
	}
	routes = append(routes, `"default": {"rungs": [{"provider": "chat", "model": "gpt-4o-mini", "price": {"input": 100, "output": 400}, "timeout": "5s"}]}`)
	overrides := map[string]string{"AIJOBS_ROUTES": `{"providers": {` + strings.Join(providers, ",\n") + `}, "routes": {` + strings.Join(routes, ",\n") + `}}`,
		"AIJOBS_WORKER_TIMEOUT": "15s", "AIJOBS_VISIBILITY_TIMEOUT": "16s"}
	for k, v := range steadyLease {
		overrides[k] = v
	}
	s := startStackWith(t, overrides, false)

	names := []string{"chat", "claude", "bedrock", "bad"}
	ids := make([]string, len(names))
	for i, name := range names {
		ids[i] = s.submit("t", "schema-"+name, fmt.Sprintf(`{"model": %q, "max_attempts": 2,
			"input": {"messages": [{"role": "user", "content": "summarise the contract"}], "max_tokens": 512, "response_format": %s}}`, name, schemaFormat))
	}
	// awaitAll answers the jobs in the order they ended, not submitted.
	ended := map[string]job.Job{}
	for _, j := range awaitAll(t, s, ids, 30*time.Second) {
		ended[j.ID] = j
	}
	for i, name := range names[:3] {
		t.Run(name, func(t *testing.T) {
			j := ended[ids[i]]
			var res struct{ Output string }
			_ = json.Unmarshal(j.Result, &res)
			var answer struct {
				Title string   `json:"title"`
				Pages int      `json:"pages"`
				Tags  []string `json:"tags"`
			}
			if j.State != job.Succeeded || json.Unmarshal([]byte(res.Output), &answer) != nil || len(answer.Title) < 3 || answer.Pages < 1 || len(answer.Tags) < 2 {
				t.Fatalf("job %s: %s (%s), answer %q", j.ID, j.State, j.ErrorClass, res.Output)
			}
			if j.Cost <= 0 {
				t.Errorf("job %s: cost %s, want the answer's", j.ID, j.Cost)
			}
		})
	}
	t.Run("nonconforming", func(t *testing.T) {
		j := ended[ids[3]]
		bills := bad.Bills()
		var want job.Nanocents
		for _, b := range bills {
			want += job.Nanocents(b.Input*100_000 + b.Output*400_000) // 100 and 400 cents a million tokens
		}
		if j.State != job.Failed || j.ErrorClass != job.InvalidOutput || j.Attempts != 2 || j.Result != nil {
			t.Fatalf("job %s: %s (%s) after %d attempts, want failed invalid_output after 2", j.ID, j.State, j.ErrorClass, j.Attempts)
		}
		if len(bills) != 2 || want <= 0 || j.Cost != want || j.CostEstimated {
			t.Fatalf("job %s: cost %s (estimated %v), the fake billed %d answers worth %s", j.ID, j.Cost, j.CostEstimated, len(bills), want)
		}
	})
}

// serve starts h for the test's life and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
