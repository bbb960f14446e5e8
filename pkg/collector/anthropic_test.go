package collector_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// withAnthropic is a fixture whose batch lane speaks Anthropic's Message
// Batches wire to the local server s.
func withAnthropic(t *testing.T, s *anthropictest.Server) *fixture {
	return withAnthropicHandler(t, s.Handler())
}

// withAnthropicHandler is withAnthropic's fixture over handler h.
func withAnthropicHandler(t *testing.T, h http.Handler) *fixture {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return setup(t, 0, func(*fake.Provider) model.Provider { return c })
}

// The whole lane on Anthropic's wire, a lost create included: one batch,
// each job settled at the batch price, an errored item ended, an expired
// one back in the queue, nothing generated twice.
func TestAMessageBatchIsSettledItemByItem(t *testing.T) {
	s := &anthropictest.Server{Polls: 1}
	f := withAnthropic(t, s)
	ok := f.enlisted("ok", "a question", time.Now().Add(time.Hour))
	bad := f.enlisted("bad", "[[anthropic:error=invalid_request_error]]", time.Now().Add(time.Hour))
	late := f.enlisted("late", "[[anthropic:expire]]", time.Now().Add(time.Hour))
	s.LoseCreates(1)
	f.run() // collects and submits; the create's answer is lost, its batch found
	f.run() // the batch runs
	f.run() // ended: settled
	if got := f.get(ok.ID); got.State != job.Succeeded || got.ResultLane != job.Batch || got.Held != 0 || got.CostEstimated ||
		got.Cost == 0 || s.Generated(ok.ID) != 1 {
		t.Errorf("answered: %+v", got)
	}
	if got := f.get(bad.ID); got.State != job.Failed || got.ErrorClass != job.InvalidRequest || got.Cost != 0 || got.Held != 0 {
		t.Errorf("errored: %+v, want failed for free", got)
	}
	if got := f.get(late.ID); got.State != job.Queued || got.ErrorClass != job.CapacityUnavailable || got.Cost != 0 || got.Held != 0 {
		t.Errorf("expired: %+v, want queued again for free", got)
	}
	if !slices.Equal(f.queue.sent, []string{late.ID}) || s.Batches() != 1 {
		t.Errorf("re-sent %v, %d batches", f.queue.sent, s.Batches())
	}
	if open, _ := f.batches.Batches(context.Background()); len(open) != 0 {
		t.Errorf("open batches %+v", open)
	}
}

// A collector that dies while its create is under way (the create lands,
// its answer never recorded) leaves the batch sealed; the next run finds
// the batch that create made, by when it was made and its size (not
// another batch record's), instead of making a second: the jobs are
// generated once.
func TestAKilledCollectorsBatchIsFoundNotMadeAgain(t *testing.T) {
	s := &anthropictest.Server{Polls: 3} // the other batch is still open when ours is sent again
	ctx, die := context.WithCancel(context.Background())
	f := withAnthropicHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/batches" {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			// The create lands, then the collector dies before its
			// answer comes: the answer waits until the client has gone,
			// so the next run never looks before the batch exists (it
			// did when the answer raced the dying run, and made another).
			s.Handler().ServeHTTP(httptest.NewRecorder(), r)
			die()
			<-r.Context().Done()
			return
		}
		s.Handler().ServeHTTP(w, r)
	}))
	// Another batch of the collector's, as large and made as recently:
	// never taken for ours.
	other := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/messages/batches", strings.NewReader(
		`{"requests":[{"custom_id":"x1","params":{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}},`+
			`{"custom_id":"x2","params":{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"y"}]}}]}`))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	s.Handler().ServeHTTP(other, req)
	f.batches.open["b_other"] = job.BatchRecord{ID: "b_other", Lane: job.LaneKey("default", 0), Provider: "f", Model: "m",
		State: job.Submitted, ProviderID: "msgbatch_000001", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	a := f.enlisted("a", "one question", time.Now().Add(time.Hour))
	b := f.enlisted("b", "another", time.Now().Add(time.Hour))
	_ = f.c.Run(ctx) // the run ends with its context: the answer is lost
	if got := f.batches.open; other.Code != http.StatusOK || len(got) != 2 {
		t.Fatalf("after the dead run: %d, %+v", other.Code, got)
	}
	for id, r := range f.batches.open {
		if id != "b_other" && (r.State != job.Sealed || r.SealedAt.IsZero()) {
			t.Fatalf("after the dead run: %+v, want sealed", r)
		}
	}
	for range 5 { // sends again, finding the batch made; polls it; settles it
		f.run()
	}
	for _, j := range []job.Job{a, b} {
		if got := f.get(j.ID); got.State != job.Succeeded || s.Generated(j.ID) != 1 {
			t.Errorf("%s: %s, generated %d times", j.RequestKey, got.State, s.Generated(j.ID))
		}
	}
	if s.Batches() != 2 {
		t.Fatalf("%d batches made, want the other's and ours", s.Batches())
	}
}
