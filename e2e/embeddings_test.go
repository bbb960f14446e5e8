package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// embeddingDims keeps the 10,000 vectors small (2.5 MB of floats), so
// the test stays well under a minute under -race.
const embeddingDims = 64

// embedPricePerToken is the route's input price below, 2 cents per
// million tokens (text-embedding-3-small's list price), in nanocents.
const embedPricePerToken = 2_000

// TestTenThousandTextsAreEmbeddedInOneJob: on the emulator, one job of
// 10,000 texts is embedded through OpenAI's wire (the openaitest fake,
// in calls of 2,048), its vectors read back through pkg/client by link,
// each the fake's for its text, in order; its cost exactly the fake's
// token count at the input price, computed here; one attempt (issue 39,
// item 5). Texts on a chat route, and messages on the embedding route,
// are refused at create.
func TestTenThousandTextsAreEmbeddedInOneJob(t *testing.T) {
	t.Parallel()
	fake := &openaitest.Server{}
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	doc := fmt.Sprintf(`{"providers": {"oai": {"kind": "openai", "base_url": %q, "stream": false}},
		"routes": {"default": {"rungs": [{"provider": "oai", "model": "gpt-4o-mini", "price": {"input": 15, "output": 60}, "timeout": "5s"}]},
		           "embed": {"rungs": [{"provider": "oai", "model": "text-embedding-3-small", "price": {"input": 2, "output": 0}, "timeout": "20s"}]}}}`, srv.URL)
	env := maps.Clone(steadyLease)
	maps.Copy(env, map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_WORKER_TIMEOUT": "30s", "AIJOBS_VISIBILITY_TIMEOUT": "31s"})
	s := startStackWith(t, env, false)

	refused := map[string]string{
		"texts on a chat route":          `{"model": "default", "input": {"texts": ["a"]}}`,
		"messages on an embedding route": `{"model": "embed", "input": {"messages": [{"role": "user", "content": "a"}]}}`,
	}
	for name, body := range refused {
		r, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "embed-" + name}, body)
		if r.status != http.StatusUnprocessableEntity || r.body["code"] != "option_unsupported" {
			t.Errorf("%s: %d %s, want 422 option_unsupported", name, r.status, r.raw)
		}
	}

	texts := make([]string, 10_000)
	var tokens int64
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d: %s", i, strings.Repeat("w", i%37))
		tokens += openaitest.EmbeddingTokens(texts[i])
	}
	input, _ := json.Marshal(map[string]any{"texts": texts, "dimensions": embeddingDims})
	id := s.submit("t", "embed-10k", `{"model": "embed", "input": `+string(input)+`}`)
	v := s.wait("t", id, 45*time.Second, "succeeded", "failed", "abandoned")
	if v["state"] != "succeeded" {
		t.Fatalf("job %s: %v %v %v", id, v["state"], v["error_class"], v["error"])
	}

	c, err := client.New(client.Config{BaseURL: s.url, Auth: client.BearerToken("t")})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Get(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if !snap.View.Linked() {
		t.Errorf("the vectors came inline: want them by link (they are MBs)")
	}
	vectors, err := client.Embeddings(snap.View.Result)
	if err != nil {
		t.Fatal(err)
	}
	if len(vectors) != len(texts) {
		t.Fatalf("%d vectors, want %d", len(vectors), len(texts))
	}
	for i, text := range texts {
		if !slices.Equal(vectors[i], openaitest.Vector(text, embeddingDims)) {
			t.Fatalf("vector %d is not the one for its text", i)
		}
	}
	if want := job.Nanocents(tokens * embedPricePerToken); snap.View.CostCents != want || snap.View.CostEstimated {
		t.Errorf("cost_cents %v (estimated %v), want exactly %v: %d tokens at 2 cents a million", snap.View.CostCents, snap.View.CostEstimated, want, tokens)
	}
	if snap.View.Attempts != 1 {
		t.Errorf("%d attempts, want 1", snap.View.Attempts)
	}
	if calls := fake.EmbeddingCalls(); !slices.Equal(calls, []int{2048, 2048, 2048, 2048, 1808}) {
		t.Errorf("embedding calls of %v texts, want four of 2,048 and one of 1,808", calls)
	}
}

// TestTitanEmbedsAJobEndToEnd: on the emulator, an embedding job on a
// route of Titan Text Embeddings V2 (the bedrocktest fake) is one
// InvokeModel a text, its vectors each the fake's for its text and its
// cost exactly their token counts at the input price; a length Titan
// does not make is refused at create.
func TestTitanEmbedsAJobEndToEnd(t *testing.T) {
	t.Parallel()
	fake := bedrocktest.New(nil)
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	doc := fmt.Sprintf(`{"providers": {"br": {"kind": "bedrock", "region": "us-east-1", "endpoint": %q}},
		"routes": {"default": {"rungs": [{"provider": "br", "model": "amazon.titan-embed-text-v2:0", "price": {"input": 2, "output": 0}, "timeout": "10s"}]}}}`, srv.URL)
	env := maps.Clone(steadyLease)
	maps.Copy(env, map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_WORKER_TIMEOUT": "15s", "AIJOBS_VISIBILITY_TIMEOUT": "16s"})
	s := startStackWith(t, env, false)

	r, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "titan-64"}, `{"input": {"texts": ["a"], "dimensions": 64}}`)
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "option_unsupported" || r.body["field"] != "input.dimensions" {
		t.Errorf("64 dimensions on Titan: %d %s, want 422 option_unsupported on input.dimensions", r.status, r.raw)
	}

	texts := make([]string, 40)
	var tokens int64
	for i := range texts {
		texts[i] = fmt.Sprintf("titan text %d %s", i, strings.Repeat("z", i))
		tokens += bedrocktest.TitanTokens(texts[i])
	}
	input, _ := json.Marshal(map[string]any{"texts": texts, "dimensions": 256})
	id := s.submit("t", "titan-40", `{"input": `+string(input)+`}`)
	if v := s.wait("t", id, 30*time.Second, "succeeded", "failed", "abandoned"); v["state"] != "succeeded" {
		t.Fatalf("job %s: %v %v %v", id, v["state"], v["error_class"], v["error"])
	}
	c, err := client.New(client.Config{BaseURL: s.url, Auth: client.BearerToken("t")})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Get(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	vectors, err := client.Embeddings(snap.View.Result)
	if err != nil || len(vectors) != len(texts) {
		t.Fatalf("%d vectors (%v), want %d", len(vectors), err, len(texts))
	}
	for i, text := range texts {
		if !slices.Equal(vectors[i], bedrocktest.TitanVector(text, 256)) {
			t.Fatalf("vector %d is not the one for its text", i)
		}
	}
	if want := job.Nanocents(tokens * embedPricePerToken); snap.View.CostCents != want || snap.View.CostEstimated || snap.View.Attempts != 1 {
		t.Errorf("cost_cents %v (estimated %v), %d attempts; want exactly %v in one", snap.View.CostCents, snap.View.CostEstimated, snap.View.Attempts, want)
	}
	if fake.Invocations() != len(texts) {
		t.Errorf("%d InvokeModel calls, want one a text: %d", fake.Invocations(), len(texts))
	}
}

// TestCohereEmbedsAJobEndToEnd: on the emulator, an embedding job of 200
// texts on a route of Cohere Embed v3 (the bedrocktest fake) is three
// InvokeModel calls of 96, 96 and 8 texts, its vectors read back through
// pkg/client in order, each the fake's for its text, its cost exactly
// the fake's token headers at the input price, in one attempt; a length
// other than 1,024 and a text over 2,048 characters are refused at
// create, naming the field.
func TestCohereEmbedsAJobEndToEnd(t *testing.T) {
	t.Parallel()
	fake := bedrocktest.New(nil)
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	doc := fmt.Sprintf(`{"providers": {"br": {"kind": "bedrock", "region": "us-east-1", "endpoint": %q}},
		"routes": {"default": {"rungs": [{"provider": "br", "model": "cohere.embed-english-v3", "price": {"input": 2, "output": 0}, "timeout": "10s"}]}}}`, srv.URL)
	env := maps.Clone(steadyLease)
	maps.Copy(env, map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_WORKER_TIMEOUT": "15s", "AIJOBS_VISIBILITY_TIMEOUT": "16s"})
	s := startStackWith(t, env, false)

	refused := map[string]string{
		"input.dimensions": `{"input": {"texts": ["a"], "dimensions": 256}}`,
		"input.texts[1]":   `{"input": {"texts": ["a", "` + strings.Repeat("x", 2049) + `"]}}`,
	}
	for field, body := range refused {
		r, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "cohere-" + field}, body)
		if r.status != http.StatusUnprocessableEntity || r.body["code"] != "option_unsupported" || r.body["field"] != field {
			t.Errorf("%s: %d %s, want 422 option_unsupported on %s", field, r.status, r.raw, field)
		}
	}

	texts := make([]string, 200)
	var tokens int64
	for i := range texts {
		texts[i] = fmt.Sprintf("cohere text %d %s", i, strings.Repeat("q", i%50))
		tokens += bedrocktest.CohereTokens(texts[i])
	}
	input, _ := json.Marshal(map[string]any{"texts": texts, "dimensions": 1024})
	id := s.submit("t", "cohere-200", `{"input": `+string(input)+`}`)
	if v := s.wait("t", id, 30*time.Second, "succeeded", "failed", "abandoned"); v["state"] != "succeeded" {
		t.Fatalf("job %s: %v %v %v", id, v["state"], v["error_class"], v["error"])
	}
	c, err := client.New(client.Config{BaseURL: s.url, Auth: client.BearerToken("t")})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Get(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	vectors, err := client.Embeddings(snap.View.Result)
	if err != nil || len(vectors) != len(texts) {
		t.Fatalf("%d vectors (%v), want %d", len(vectors), err, len(texts))
	}
	for i, text := range texts {
		if !slices.Equal(vectors[i], bedrocktest.CohereVector(text)) {
			t.Fatalf("vector %d is not the one for its text", i)
		}
	}
	if want := job.Nanocents(tokens * embedPricePerToken); snap.View.CostCents != want || snap.View.CostEstimated || snap.View.Attempts != 1 {
		t.Errorf("cost_cents %v (estimated %v), %d attempts; want exactly %v in one", snap.View.CostCents, snap.View.CostEstimated, snap.View.Attempts, want)
	}
	if calls := fake.CohereCalls(); !slices.Equal(calls, []int{96, 96, 8}) {
		t.Errorf("InvokeModel calls of %v texts, want 96, 96 and 8", calls)
	}
}
