package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
)

// thinkingRequest asks a Claude 4 model for every option the Messages
// API takes: top_p (at least 0.95 while it thinks), stop sequences and a
// thinking budget below max_tokens.
func thinkingRequest() model.Request {
	r := request()
	topP := 0.96
	r.Model, r.MaxTokens = claude4[0], 4096
	r.Options = job.Options{TopP: &topP, Stop: []string{"END"}, Reasoning: &job.Reasoning{Effort: "high", BudgetTokens: 2048}}
	return r
}

// The Messages body carries top_p, stop_sequences and thinking
// {type: enabled, budget_tokens} (docs.anthropic.com/en/api/messages),
// and the fake, holding Claude 4 to Anthropic's rules, serves it.
func TestTheMessagesBodyCarriesTheOptions(t *testing.T) {
	var sent map[string]any
	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &sent)
		fwd, _ := http.NewRequest(r.Method, fake.URL+r.URL.Path, bytes.NewReader(b))
		fwd.Header = r.Header
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer spy.Close()
	if _, err := clientAt(t, spy.URL, false).Generate(context.Background(), thinkingRequest()); err != nil {
		t.Fatalf("Generate: %v (the fake refused the body?)", err)
	}
	if sent["top_p"] != 0.96 || fmt.Sprint(sent["stop_sequences"]) != "[END]" ||
		fmt.Sprint(sent["thinking"]) != "map[budget_tokens:2048 type:enabled]" {
		t.Fatalf("sent %v: want top_p, stop_sequences and thinking", sent)
	}
	for _, k := range []string{"seed", "reasoning", "reasoning_effort", "stop"} {
		if _, ok := sent[k]; ok {
			t.Errorf("sent %s, a member the Messages API does not take: %v", k, sent)
		}
	}
}

// A message batch's requests are the same bodies.
func TestABatchRequestCarriesTheOptions(t *testing.T) {
	s := &anthropictest.Server{Polls: 1}
	c := batchClient(t, s)
	r := thinkingRequest()
	r.JobID, r.Lane = "job-a", job.Batch
	if _, err := c.SubmitBatch(t.Context(), "b_opts", []model.Request{r}); err != nil {
		t.Fatal(err)
	}
	p := s.Requests()[0].Params
	if p.TopP == nil || *p.TopP != 0.96 || len(p.StopSequences) != 1 || p.Thinking == nil || p.Thinking.BudgetTokens != 2048 || len(p.Unknown) != 0 {
		t.Fatalf("batch params %+v", p)
	}
}

// A seed, or an effort without a budget, has no place in the Messages
// API: the call is refused unsent rather than made without it.
func TestAnOptionTheMessagesAPIHasNoPlaceForIsRefusedUnsent(t *testing.T) {
	s := &anthropictest.Server{}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	seed := int64(1)
	for _, o := range []job.Options{{Seed: &seed}, {Reasoning: &job.Reasoning{Effort: "low"}}} {
		r := request()
		r.Options = o
		_, err := clientAt(t, srv.URL, false).Generate(context.Background(), r)
		var me *model.Error
		if !errors.As(err, &me) || me.Class != job.InvalidRequest || len(s.Billed()) != 0 {
			t.Fatalf("%+v: err %v, %d billed; want invalid_request, nothing sent", o, err, len(s.Billed()))
		}
	}
}

// A message batch holding such a request is refused unsent too: none is
// made.
func TestABatchWithAnOptionTheMessagesAPIHasNoPlaceForIsRefused(t *testing.T) {
	s := &anthropictest.Server{}
	seed := int64(1)
	r := batchRequest("job-a", "hi")
	r.Options.Seed = &seed
	_, err := batchClient(t, s).SubmitBatch(t.Context(), "b_seed", []model.Request{batchRequest("job-b", "ok"), r})
	var me *model.Error
	if !errors.As(err, &me) || me.Class != job.InvalidRequest || s.Batches() != 0 {
		t.Fatalf("err %v with %d batches, want invalid_request and none made", err, s.Batches())
	}
}

// The fake refuses what Anthropic refuses, so a wrong mapping fails.
func TestTheFakeRefusesOptionsAsAnthropicDoes(t *testing.T) {
	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	for _, tt := range []struct {
		model, extra, want string // want "" when served
	}{
		{"claude-sonnet-4-5", `,"seed":3`, "seed: Extra inputs are not permitted"},
		{"claude-sonnet-4-5", `,"reasoning_effort":"low"`, "reasoning_effort: Extra inputs are not permitted"},
		{"claude-sonnet-4-5", `,"stop":["x"]`, "stop: Extra inputs are not permitted"},
		{"claude-sonnet-4-5", `,"thinking":{"type":"enabled","budget_tokens":1000}`, "thinking.budget_tokens"},
		{"claude-sonnet-4-5", `,"thinking":{"type":"enabled","budget_tokens":4096}`, "thinking.budget_tokens"},
		{"claude-3-5-haiku-20241022", `,"thinking":{"type":"enabled","budget_tokens":1024}`, "not supported for this model"},
		{"claude-opus-4-7", `,"thinking":{"type":"enabled","budget_tokens":1024}`, "not supported for this model"},
		{"claude-3-7-sonnet-20250219", `,"thinking":{"type":"enabled","budget_tokens":1024},"temperature":0.5`, "only be set to 1"},
		{"claude-sonnet-4-5", `,"thinking":{"type":"enabled","budget_tokens":1024},"top_p":0.9`, "0.95"},
		{"claude-sonnet-4-5", `,"thinking":{"type":"enabled","budget_tokens":1024},"top_p":0.95,"stop_sequences":["x"]`, ""},
		{"claude-3-5-haiku-20241022", `,"top_p":0.5,"temperature":0.5,"stop_sequences":["x"]`, ""},
	} {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":4096%s,"messages":[{"role":"user","content":"hi"}]}`, tt.model, tt.extra)
		resp, err := http.Post(fake.URL+"/v1/messages", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tt.want == "" && resp.StatusCode != http.StatusOK || tt.want != "" && (resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tt.want)) {
			t.Errorf("%s%s: %d %s, want %q", tt.model, tt.extra, resp.StatusCode, b, tt.want)
		}
	}
}
