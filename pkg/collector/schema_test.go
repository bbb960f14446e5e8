package collector_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// A batch answer is validated as a call's is: one its response_format's
// schema accepts succeeds; one it refuses goes back to the queue
// invalid_output with its cost kept, at the batch price.
func TestABatchAnswerIsValidatedAgainstItsSchema(t *testing.T) {
	f := setup(t, 0, nil)
	format := &job.ResponseFormat{Type: job.FormatJSONSchema, JSONSchema: &job.JSONSchema{Name: "p",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}}
	input := func(content string) job.Input {
		return job.Input{Messages: []job.Message{{Role: "user", Content: content}}, MaxTokens: 10, Options: job.Options{ResponseFormat: format}}
	}
	good := f.enlistedWith("good", input("name someone"), time.Now().Add(time.Hour))
	bad := f.enlistedWith("bad", input("name someone [[fake:nonconforming]]"), time.Now().Add(time.Hour))
	f.run()
	f.run()
	if got := f.get(good.ID); got.State != job.Succeeded || got.Cost == 0 {
		t.Errorf("conforming answer: %+v, want succeeded", got)
	}
	got := f.get(bad.ID)
	if got.State != job.Queued || got.ErrorClass != job.InvalidOutput || got.Held != 0 || got.Result != nil ||
		got.Cost == 0 || 2*got.Cost != f.prov.Billed(bad.ID) {
		t.Errorf("nonconforming answer: %+v, want queued again invalid_output with its batch-priced cost (billed %s)", got, f.prov.Billed(bad.ID))
	}
	if !slices.Equal(f.queue.sent, []string{bad.ID}) {
		t.Errorf("re-sent %v, want the nonconforming one", f.queue.sent)
	}
}
