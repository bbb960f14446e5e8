package openai_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

const batchSecret = "sk-batch-SECRET"

// batchClient is a client of a local batch server.
func batchClient(t *testing.T, s *openaitest.Server) *openai.Client {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: batchSecret, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func batchRequest(id, prompt string) model.Request {
	return model.Request{JobID: id, Messages: []job.Message{{Role: "user", Content: prompt}}, MaxTokens: 50, Lane: job.Batch}
}

// The input file is what OpenAI's batch reference asks for: one line per
// request, its custom_id the job's id, a chat-completions body that is a
// whole (not streamed) standard call: a batch is its own tier, so no
// service_tier.
func TestABatchIsOneFileOfChatRequests(t *testing.T) {
	s := &openaitest.Server{Polls: 1}
	c := batchClient(t, s)
	id, err := c.SubmitBatch(t.Context(), "b_one", []model.Request{batchRequest("job-a", "hi"), batchRequest("job-b", "there")})
	if err != nil || id == "" {
		t.Fatalf("submit: %q, %v", id, err)
	}
	lines := s.Inputs()
	if len(lines) != 2 || s.Batches() != 1 {
		t.Fatalf("%d lines, %d batches; want 2 lines in 1 batch", len(lines), s.Batches())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l.CustomID, "job-") || l.Method != "POST" || l.URL != "/v1/chat/completions" ||
			l.Body.Model != "gpt-test" || l.Body.MaxTokens != nil || l.Body.MaxCompletionTokens != 50 || l.Body.ServiceTier != "" || l.Body.Stream || len(l.Body.Messages) != 1 {
			t.Errorf("line %+v", l)
		}
	}
	if ended, err := c.BatchEnded(t.Context(), id); err != nil || ended {
		t.Errorf("ended at the first read: %v, %v", ended, err)
	}
	if ended, err := c.BatchEnded(t.Context(), id); err != nil || !ended {
		t.Errorf("not ended at the second read: %v, %v", ended, err)
	}
}

// OpenAI deduplicates no batch create: a collector that died after its
// create landed (its answer lost) submits again under the same key and
// must find the batch it made, even with many batches made since, not
// make (and pay for) a second.
func TestASecondSubmitUnderTheKeyFindsTheBatchTheFirstMade(t *testing.T) {
	s := &openaitest.Server{}
	c := batchClient(t, s)
	reqs := []model.Request{batchRequest("job-a", "hi")}
	s.LoseCreates(1)
	if _, err := c.SubmitBatch(t.Context(), "b_lost", reqs); err == nil {
		t.Fatal("a create whose answer was lost succeeded")
	}
	for i := range 150 { // past the first page of 100
		if _, err := c.SubmitBatch(t.Context(), fmt.Sprintf("b_other%d", i), reqs); err != nil {
			t.Fatal(err)
		}
	}
	id, err := c.SubmitBatch(t.Context(), "b_lost", reqs)
	if err != nil || id == "" {
		t.Fatalf("submit again: %q, %v", id, err)
	}
	if s.Batches() != 151 {
		t.Errorf("%d batches, want 151: the second submit made another", s.Batches())
	}
	again, err := c.SubmitBatch(t.Context(), "b_lost", reqs)
	if err != nil || again != id {
		t.Errorf("a third submit answered %q, %v; want %q", again, err, id)
	}
}

// Each request's outcome is read from the output file and the error
// file: an answer with the server's counts, an answer without them
// estimated from its output, a refused item classified
// as a call's refusal is (billed nothing), an expired one a capacity
// refusal (the lane had no room in its window, no fault of the job's).
func TestEachBatchItemIsAnsweredOrClassified(t *testing.T) {
	s := &openaitest.Server{}
	c := batchClient(t, s)
	reqs := []model.Request{batchRequest("job-ok", "a plain question"), batchRequest("job-400", "[[openai:status=400]]"),
		batchRequest("job-429", "[[openai:status=429]]"), batchRequest("job-late", "[[openai:expire]]"),
		batchRequest("job-nocount", "a long question [[openai:nousage]]")}
	id, err := c.SubmitBatch(t.Context(), "b_mixed", reqs)
	if err != nil {
		t.Fatal(err)
	}
	if ended, err := c.BatchEnded(t.Context(), id); err != nil || !ended {
		t.Fatalf("ended %v, %v", ended, err)
	}
	got := modeltest.BatchOutcomes(t, c, id, batchSecret)
	want := map[string]string{
		"job-ok":      " 5/2 est=false",
		"job-400":     "invalid_request 0/0 est=false",
		"job-429":     "rate_limited 0/0 est=false",
		"job-late":    "capacity_unavailable 0/0 est=false",
		"job-nocount": " 0/8 est=true", // the collector adds the prompt's share
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) || s.Generated("job-ok") != 1 || s.Generated("job-400") != 0 {
		t.Errorf("results %v; generated ok %d, 400 %d", got, s.Generated("job-ok"), s.Generated("job-400"))
	}
}

// A batch whose file failed validation ends with no file at all: no
// result for any job (the collector hands each back).
func TestABatchThatFailedValidationHasNoResults(t *testing.T) {
	s := &openaitest.Server{FailValidation: true}
	c := batchClient(t, s)
	id, err := c.SubmitBatch(t.Context(), "b_bad", []model.Request{batchRequest("job-a", "hi")})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := c.BatchResults(t.Context(), id, func(string, model.Response, error) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d results, %v; want none", n, err)
	}
}

// The batch wire's refusals are classified like a call's, and none shows
// the key; results of a batch still running are refused.
func TestTheBatchWiresRefusalsAreClassified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + batchSecret + `","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: batchSecret})
	if err != nil {
		t.Fatal(err)
	}
	modeltest.BatchRefusals(t, c, batchClient(t, &openaitest.Server{Polls: 5}), batchRequest("job-a", "hi"), batchSecret)
}
