package anthropic_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

const batchSecret = "sk-ant-batch-SECRET"

func batchClient(t *testing.T, s *anthropictest.Server) *anthropic.Client {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: batchSecret, Model: "claude-test", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func batchRequest(id, prompt string) model.Request {
	return model.Request{JobID: id, Lane: job.Batch, Messages: []job.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: prompt}}}
}

// A batch is one create of Messages requests, each under its job's id, as
// a whole call's (never streamed, whatever the entry's stream says; the
// system prompt on top; the API's required max_tokens filled in).
func TestAMessageBatchHoldsEachJobsRequest(t *testing.T) {
	s := &anthropictest.Server{Polls: 1}
	c := batchClient(t, s)
	id, err := c.SubmitBatch(t.Context(), "b_one", []model.Request{batchRequest("job-a", "hi"), batchRequest("job-b", "there")})
	if err != nil || id == "" {
		t.Fatalf("submit: %q, %v", id, err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || s.Batches() != 1 {
		t.Fatalf("%d requests in %d batches", len(reqs), s.Batches())
	}
	for _, q := range reqs {
		p := q.Params
		if !strings.HasPrefix(q.CustomID, "job-") || p.Model != "claude-test" || p.MaxTokens != anthropic.DefaultMaxTokens || p.Stream ||
			p.System != "be brief" || len(p.Messages) != 1 {
			t.Errorf("request %+v", q)
		}
	}
	for i, want := range []bool{false, true} {
		if ended, err := c.BatchEnded(t.Context(), id); err != nil || ended != want {
			t.Errorf("read %d: ended %v, %v; want %v", i+1, ended, err, want)
		}
	}
}

// Anthropic deduplicates no create and keeps no key on a batch: a create
// whose answer was lost is found among the newest batches (one made since
// it was sent, of as many requests), not made twice; when two could be
// it, none is guessed.
func TestACreateWhoseAnswerWasLostFindsItsBatch(t *testing.T) {
	s := &anthropictest.Server{}
	c := batchClient(t, s)
	reqs := []model.Request{batchRequest("job-a", "hi"), batchRequest("job-b", "there")}
	if _, err := c.SubmitBatch(t.Context(), "b_other", reqs[:1]); err != nil {
		t.Fatal(err)
	}
	s.LoseCreates(1)
	id, err := c.SubmitBatch(t.Context(), "b_lost", reqs)
	if err != nil || id != "msgbatch_000002" || s.Batches() != 2 {
		t.Fatalf("lost create: %q, %v, %d batches; want the one it made", id, err, s.Batches())
	}
	if _, err := c.SubmitBatch(t.Context(), "b_twin", reqs); err != nil {
		t.Fatal(err)
	}
	s.LoseCreates(1)
	if id, err := c.SubmitBatch(t.Context(), "b_ambiguous", reqs); err == nil {
		t.Errorf("a lost create among same-sized batches guessed %q", id)
	}
	// A create refused 4xx made nothing: the same-sized batch just made
	// is another's, never taken for it.
	s = &anthropictest.Server{}
	c = batchClient(t, s)
	if _, err := c.SubmitBatch(t.Context(), "b_recent", reqs); err != nil {
		t.Fatal(err)
	}
	s.RefuseCreates(1)
	if id, err := c.SubmitBatch(t.Context(), "b_refused", reqs); err == nil {
		t.Errorf("a create refused 429 took %q, made by another", id)
	}
}

// A batch sent again after its collector died mid-create is the one
// batch of as many requests made since the jobs were sealed, other than
// those the collector's other batches took; with none, a batch is made;
// with two, none is guessed and none is made.
func TestAResubmitFindsWhatAnEarlierSendMade(t *testing.T) {
	s := &anthropictest.Server{}
	c := batchClient(t, s)
	reqs := []model.Request{batchRequest("job-a", "hi"), batchRequest("job-b", "there")}
	sealed := time.Now()
	if _, err := c.SubmitBatch(t.Context(), "b_other", reqs[:1]); err != nil { // another size: not ours
		t.Fatal(err)
	}
	id, err := c.ResubmitBatch(t.Context(), "b_new", sealed, nil, reqs)
	if err != nil || id != "msgbatch_000002" || s.Batches() != 2 {
		t.Fatalf("nothing made before: %q, %v, %d batches; want one made", id, err, s.Batches())
	}
	again, err := c.ResubmitBatch(t.Context(), "b_new", sealed, nil, reqs)
	if err != nil || again != id || s.Batches() != 2 {
		t.Fatalf("sent again: %q, %v, %d batches; want %q found, none made", again, err, s.Batches(), id)
	}
	twin, err := c.SubmitBatch(t.Context(), "b_twin", reqs)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := c.ResubmitBatch(t.Context(), "b_new", sealed, nil, reqs); !errors.Is(err, anthropic.ErrAmbiguous) || s.Batches() != 3 {
		t.Fatalf("two candidates: %q, %v, %d batches; want ErrAmbiguous and none made", id, err, s.Batches())
	}
	if again, err := c.ResubmitBatch(t.Context(), "b_new", sealed, []string{twin}, reqs); err != nil || again != id {
		t.Fatalf("the twin another batch record took: %q, %v; want %q", again, err, id)
	}
	if _, err := c.ResubmitBatch(t.Context(), "b_later", time.Now().Add(time.Hour), nil, reqs); err != nil || s.Batches() != 4 {
		t.Fatalf("sealed after every batch: %v, %d batches; want one made", err, s.Batches())
	}
}

// Two batches as large made since the seal are told apart once they
// ended, by whose jobs their results name; the newest hundred are not
// all a lookup reads.
func TestAResubmitTellsEndedBatchesApartByTheirResults(t *testing.T) {
	s := &anthropictest.Server{}
	c := batchClient(t, s)
	sealed := time.Now()
	ours := []model.Request{batchRequest("job-a", "hi"), batchRequest("job-b", "there")}
	theirs := []model.Request{batchRequest("x-1", "hi"), batchRequest("x-2", "there")}
	mine, err := c.SubmitBatch(t.Context(), "b_ours", ours)
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.SubmitBatch(t.Context(), "b_theirs", theirs)
	if err != nil {
		t.Fatal(err)
	}
	for range 150 { // a busy key: ours is past the first page
		if _, err := c.SubmitBatch(t.Context(), "b_busy", ours[:1]); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := c.ResubmitBatch(t.Context(), "b_ours", sealed, nil, ours); !errors.Is(err, anthropic.ErrAmbiguous) {
		t.Fatalf("two processing: %q, %v; want ErrAmbiguous", id, err)
	}
	for _, id := range []string{mine, other} {
		if ended, err := c.BatchEnded(t.Context(), id); err != nil || !ended {
			t.Fatalf("batch %s: ended %v, %v", id, ended, err)
		}
	}
	if id, err := c.ResubmitBatch(t.Context(), "b_ours", sealed, nil, ours); err != nil || id != mine || s.Batches() != 152 {
		t.Fatalf("both ended: %q, %v, %d batches; want %q, none made", id, err, s.Batches(), mine)
	}
}

// Each result is an answer with the server's counts, an answer without
// them estimated from its output, an errored item classified by its
// error type (billed nothing), or an expired one a capacity refusal.
func TestEachMessageBatchResultIsAnsweredOrClassified(t *testing.T) {
	s := &anthropictest.Server{}
	c := batchClient(t, s)
	reqs := []model.Request{batchRequest("job-ok", "a plain question"), batchRequest("job-bad", "[[anthropic:error=invalid_request_error]]"),
		batchRequest("job-busy", "[[anthropic:error=overloaded_error]]"), batchRequest("job-late", "[[anthropic:expire]]"),
		batchRequest("job-nocount", "[[anthropic:nousage]]")}
	id, err := c.SubmitBatch(t.Context(), "b_mixed", reqs)
	if err != nil {
		t.Fatal(err)
	}
	got := modeltest.BatchOutcomes(t, c, id, batchSecret, "scripted")
	want := map[string]string{
		"job-ok":      " 7/2 est=false",
		"job-bad":     "invalid_request 0/0 est=false",
		"job-busy":    "overloaded 0/0 est=false",
		"job-late":    "capacity_unavailable 0/0 est=false",
		"job-nocount": " 0/8 est=true", // the collector adds the prompt's share
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || s.Generated("job-ok") != 1 || s.Generated("job-bad") != 0 {
		t.Errorf("results\n%v\nwant\n%v", got, want)
	}
}

// The wire's refusals are classified like a call's and never show the
// key; a batch still processing has no results to read.
func TestTheMessageBatchWiresRefusalsAreClassified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + batchSecret + `"}}`))
	}))
	defer srv.Close()
	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: batchSecret})
	if err != nil {
		t.Fatal(err)
	}
	modeltest.BatchRefusals(t, c, batchClient(t, &anthropictest.Server{Polls: 5}), batchRequest("job-a", "hi"), batchSecret)
}
