package collector_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// withOpenAI is a fixture whose batch lane speaks OpenAI's batch wire to
// the local batch server s.
func withOpenAI(t *testing.T, s *openaitest.Server) *fixture {
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return setup(t, 0, func(*fake.Provider) model.Provider { return c })
}

// The whole lane on OpenAI's wire: one batch, each job settled through
// the conditional finishes at the batch price from the server's counts;
// a refused item ends, an expired one goes back to the queue for another
// lane, nothing is generated twice.
func TestAnOpenAIBatchIsSettledItemByItem(t *testing.T) {
	s := &openaitest.Server{Polls: 1}
	f := withOpenAI(t, s)
	ok := f.enlisted("ok", "a question", time.Now().Add(time.Hour))
	bad := f.enlisted("bad", "[[openai:status=400]]", time.Now().Add(time.Hour))
	late := f.enlisted("late", "[[openai:expire]]", time.Now().Add(time.Hour))
	nocount := f.enlisted("nocount", "a question [[openai:nousage]]", time.Now().Add(time.Hour))
	f.run() // collects and submits
	f.run() // the batch runs
	if got := f.get(ok.ID); got.State != job.Running {
		t.Fatalf("settled before the batch ended: %+v", got)
	}
	f.run() // ended: settled
	got := f.get(ok.ID)
	var res struct{ Usage model.Usage }
	if err := json.Unmarshal(got.Result, &res); err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	if got.State != job.Succeeded || got.ResultLane != job.Batch || got.Held != 0 || u.Estimated || u.InputTokens == 0 ||
		got.Cost != job.Nanocents(2*u.InputTokens+4*u.OutputTokens) || s.Generated(ok.ID) != 1 {
		t.Errorf("answered: %+v, usage %+v", got, u)
	}
	if got := f.get(bad.ID); got.State != job.Failed || got.ErrorClass != job.InvalidRequest || got.Cost != 0 || got.Held != 0 {
		t.Errorf("refused: %+v, want failed for free", got)
	}
	if got := f.get(late.ID); got.State != job.Queued || got.ErrorClass != job.CapacityUnavailable || got.Cost != 0 || got.Held != 0 {
		t.Errorf("expired: %+v, want queued again for free", got)
	}
	// An answer without its counts is estimated: its output from its text,
	// its input the prompt's ceiling, as a call's would be.
	in := job.PromptCeiling([]job.Message{{Role: "user", Content: "a question [[openai:nousage]]"}})
	if got := f.get(nocount.ID); got.State != job.Succeeded || !got.CostEstimated || got.Cost <= job.Nanocents(2*in) {
		t.Errorf("answered without counts: %+v, want its cost estimated over the prompt's ceiling (%d tokens)", got, in)
	}
	if !slices.Equal(f.queue.sent, []string{late.ID}) || s.Batches() != 1 {
		t.Errorf("re-sent %v, %d batches", f.queue.sent, s.Batches())
	}
}

// A collector whose create landed but whose answer was lost carries on
// with the batch it made: one batch, one generation a job.
func TestACollectorThatLostItsCreateFindsTheOpenAIBatch(t *testing.T) {
	s := &openaitest.Server{}
	f := withOpenAI(t, s)
	j := f.enlisted("k", "hello", time.Now().Add(time.Hour))
	s.LoseCreates(1)
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("the lost create was not reported")
	}
	f.run() // submits again: finds the batch
	f.run() // settles
	if got := f.get(j.ID); got.State != job.Succeeded || s.Batches() != 1 || s.Generated(j.ID) != 1 {
		t.Fatalf("job %+v; %d batches, %d generations", got, s.Batches(), s.Generated(j.ID))
	}
}

// A batch that ended with no result for a job (its file failed
// validation) hands the job back, its hold returned, nothing billed.
func TestAJobABatchEndedWithoutIsHandedBack(t *testing.T) {
	s := &openaitest.Server{FailValidation: true}
	f := withOpenAI(t, s)
	j := f.enlisted("k", "hello", time.Now().Add(time.Hour))
	f.run()
	f.run()
	if got := f.get(j.ID); got.State != job.Queued || got.Held != 0 || got.Cost != 0 || got.LeaseOwner != "" {
		t.Fatalf("job %+v, want handed back", got)
	}
	if !slices.Equal(f.queue.sent, []string{j.ID}) {
		t.Errorf("re-sent %v", f.queue.sent)
	}
	if open, _ := f.batches.Batches(context.Background()); len(open) != 0 {
		t.Errorf("open batches %+v", open)
	}
}
