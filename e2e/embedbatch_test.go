package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// embedBatchPricePerToken is the embedding rung's batch lane input price
// below, 1 cent per million tokens (half of text-embedding-3-small's
// list price, as OpenAI's Batch API bills), in nanocents.
const embedBatchPricePerToken = 1_000

// TestEmbeddingsInTheBatchLane: on the emulator, one job of 5,000 texts
// on an OpenAI embedding route with a batch lane, and a chat job in the
// batch lane of a chat route on the same provider, are enlisted by the
// worker and collected by the dev server's collector into two batches,
// one /v1/embeddings and one /v1/chat/completions (the fake fails a batch
// that mixes them, as OpenAI's validation does). The embedding job is
// three lines of 2,048, 2,048 and 904 texts, each generated once, and
// settles once all three answered: its vectors, read back through
// pkg/client, each the fake's for its text, in order; its cost exactly
// the fake's token counts at the batch price, computed here; one attempt
// each (issue 39, item 5).
func TestEmbeddingsInTheBatchLane(t *testing.T) {
	t.Parallel()
	fake := &openaitest.Server{Polls: 1}
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	lanes := `"lanes": {"batch": {"price": {"input": %d, "output": %d}, "p99": "60s", "window": "300ms"}}`
	doc := fmt.Sprintf(`{"providers": {"oai": {"kind": "openai", "base_url": %q, "stream": false}},
		"routes": {"default": {"rungs": [{"provider": "oai", "model": "gpt-4o-mini", "price": {"input": 15, "output": 60}, "timeout": "5s", `+lanes+`}]},
		           "embed": {"rungs": [{"provider": "oai", "model": "text-embedding-3-small", "price": {"input": 2, "output": 0}, "timeout": "20s", `+lanes+`}]}}}`,
		srv.URL, 7, 30, 1, 0)
	env := maps.Clone(steadyLease)
	maps.Copy(env, map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_COLLECT_EVERY": "250ms",
		"AIJOBS_WORKER_TIMEOUT": "30s", "AIJOBS_VISIBILITY_TIMEOUT": "31s"})
	s := startStackWith(t, env, false)

	texts := make([]string, 5_000)
	var tokens int64
	for i := range texts {
		texts[i] = fmt.Sprintf("batched text %d: %s", i, strings.Repeat("w", i%23))
		tokens += openaitest.EmbeddingTokens(texts[i])
	}
	input, _ := json.Marshal(map[string]any{"texts": texts, "dimensions": embeddingDims})
	embedID := s.submit("t", "embed-batch", `{"model": "embed", "input": `+string(input)+`, "deadline_seconds": 3600}`)
	chatID := s.submit("t", "chat-batch", jobBody("a batched question", `"deadline_seconds": 3600`))
	for _, j := range awaitAll(t, s, []string{embedID, chatID}, time.Minute) {
		if j.State != job.Succeeded || j.ResultLane != job.Batch || j.Attempts != 1 {
			t.Errorf("job %s: %s (%s %s) in lane %q after %d attempts; want succeeded in the batch lane at the first",
				j.ID, j.State, j.ErrorClass, j.ErrorDetail, j.ResultLane, j.Attempts)
		}
	}

	c, err := client.New(client.Config{BaseURL: s.url, Auth: client.BearerToken("t")})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Get(t.Context(), embedID, "")
	if err != nil {
		t.Fatal(err)
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
	if want := job.Nanocents(tokens * embedBatchPricePerToken); snap.View.CostCents != want || snap.View.CostEstimated {
		t.Errorf("cost_cents %v (estimated %v), want exactly %v: %d tokens at 1 cent a million", snap.View.CostCents, snap.View.CostEstimated, want, tokens)
	}
	calls := fake.EmbeddingCalls()
	slices.Sort(calls)
	if !slices.Equal(calls, []int{904, 2048, 2048}) || fake.Batches() != 2 {
		t.Errorf("embedding lines of %v texts in %d batches, want 904, 2,048 and 2,048 each once, in 2 batches (one per endpoint)", calls, fake.Batches())
	}
	endpoints := map[string]int{}
	for _, l := range fake.Inputs() {
		endpoints[l.URL]++
	}
	if endpoints[openaitest.EmbeddingsEndpoint] != 3 || endpoints[openaitest.ChatEndpoint] != 1 {
		t.Errorf("lines by endpoint %v, want 3 embeddings and 1 chat", endpoints)
	}
}
