package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// withSchema makes a job's input ask for a response_format: an object
// with a required string "name".
func withSchema(j *job.Job) {
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 10,
		Options: job.Options{ResponseFormat: &job.ResponseFormat{Type: job.FormatJSONSchema, JSONSchema: &job.JSONSchema{Name: "person",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}}}})
	j.Input = in
}

// says answers output, billed input tokens (one nanocent each).
func says(output string, input int64) func(context.Context, model.Request, int) (model.Response, error) {
	return func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: output, Model: "m1", Usage: model.Usage{InputTokens: input}}, nil
	}
}

// An answer its schema accepts is recorded as any answer is.
func TestAConformingAnswerSucceeds(t *testing.T) {
	f := setup(t, says(`{"name": "Ada"}`, 5))
	j := f.create("k1", withSchema)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	var res struct{ Output string }
	_ = json.Unmarshal(got.Result, &res)
	if got.State != job.Succeeded || res.Output != `{"name": "Ada"}` || got.Cost != 5 {
		t.Fatalf("job = %+v", got)
	}
}

// An answer its schema refuses, or that is not JSON at all, fails the
// attempt invalid_output with its cost on the record, and is retried
// until the attempts are spent: every paid answer is counted.
func TestANonconformingAnswerIsInvalidOutputRetriedAndPaid(t *testing.T) {
	for _, output := range []string{`{"age": 3}`, `Sure! Here is the JSON: {"name": "Ada"}`} {
		f := setup(t, says(output, 7))
		j := f.create("k-"+output[:4], func(j *job.Job) { withSchema(j); j.MaxAttempts = 2 })
		if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 1 {
			t.Fatalf("%s: a retryable attempt keeps its message: %v", output, failedIDs(r))
		}
		got := f.get(j.ID)
		if got.State != job.Queued || got.ErrorClass != job.InvalidOutput || got.Cost != 7 || got.Attempts != 1 {
			t.Fatalf("%s: after one attempt, job = %+v", output, got)
		}
		time.Sleep(60 * time.Millisecond) // the first backoff
		f.deliver(body(j.ID))
		got = f.get(j.ID)
		if got.State != job.Failed || got.ErrorClass != job.InvalidOutput || got.Cost != 14 || got.Attempts != 2 || got.Result != nil {
			t.Fatalf("%s: job = %+v", output, got)
		}
		if f.prov.calls[j.ID] != 2 {
			t.Fatalf("%s: %d calls, want 2", output, f.prov.calls[j.ID])
		}
	}
}

// A job without a response_format takes any answer: the check is the
// schema's, not JSON's.
func TestAJobWithoutASchemaTakesAnyAnswer(t *testing.T) {
	f := setup(t, says(`not json`, 5))
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Succeeded {
		t.Fatalf("job = %+v", got)
	}
}

// A route that falls back on invalid_output calls its next rung in the
// same attempt; both answers are paid, each at its rung's price.
func TestARouteFallsBackOnInvalidOutput(t *testing.T) {
	l := setupLadder(t, says(`{}`, 10), says(`{"name": "Ada"}`, 7), func(r *job.Route) {
		r.FallbackOn = []job.ErrorClass{job.InvalidOutput}
	})
	j := l.create("k1", withSchema)
	l.deliver(body(j.ID))
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.Attempts != 1 || got.Cost != 10+70 || got.ResultModel != "q/m1" {
		t.Fatalf("job = %+v", got)
	}
	if l.metrics.get("Fallbacks/invalid_output") != 1 {
		t.Fatalf("Fallbacks metric = %v", l.metrics.counts)
	}
}

// A detached generation read back is held to the schema as a call's
// answer is: "kept" is no JSON, so the attempt fails invalid_output, its
// one generation's cost on the record, and the job goes back for a retry.
func TestADetachedAnswerIsValidatedWhenReadBack(t *testing.T) {
	f, b, clock := detachedFixture(t, 0)
	j := f.create("k1", func(j *job.Job) { withSchema(j); j.Reserve = 1000 })
	f.deliver(body(j.ID)) // starts the generation, detached
	sent := f.sentSince(0)
	if len(sent) != 1 {
		t.Fatalf("fresh messages %v, want the delayed reattach", sent)
	}
	clock.add(sent[0].d)
	f.deliver(body(j.ID)) // reattaches and reads the answer
	got := f.get(j.ID)
	if got.State != job.Queued || got.ErrorClass != job.InvalidOutput || got.Cost != 700 || got.Held != 0 || got.Result != nil {
		t.Fatalf("job = %+v, want queued again invalid_output at the generation's cost", got)
	}
	if b.creates.Load() != 1 {
		t.Fatalf("%d generations, want 1", b.creates.Load())
	}
}
