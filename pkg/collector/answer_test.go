package collector_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
)

// TestALargeBatchAnswerIsRecordedByRef: a batch answer over the inline
// limit is put in the payload store and recorded by its ref at the batch
// price; while the store refuses, the run fails and the item stays in
// the batch, recorded by the next run, generated once.
func TestALargeBatchAnswerIsRecordedByRef(t *testing.T) {
	f := setup(t, 0, nil)
	s := memstore.NewPayloads()
	s.SetDown(true)
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route},
		Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}, Answers: s})
	id := f.enlisted("k", "[[fake:answer_bytes=100000]] the long one", time.Now().Add(time.Hour)).ID
	f.run() // collected and submitted
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("a run whose answer could not be put reported no error")
	}
	if j := f.get(id); j.State == job.Succeeded {
		t.Fatalf("succeeded with no answer stored: %+v", j.ResultRef)
	}
	s.SetDown(false)
	f.run()
	j := f.get(id)
	if j.State != job.Succeeded || j.ResultRef == nil || len(j.Result) != 0 || j.ResultLane != job.Batch {
		t.Fatalf("job %s, ref %+v, %d bytes inline: want succeeded by ref in the batch lane", j.State, j.ResultRef, len(j.Result))
	}
	body, _, _ := s.Object(j.ResultRef.Key)
	if j.ResultRef.Key != finish.ResultKey(id, job.BatchOwner(j.Batch)) || *finish.ResultRef(j.ResultRef.Key, body) != *j.ResultRef {
		t.Fatalf("ref %+v does not prove the stored %d bytes", j.ResultRef, len(body))
	}
	var res struct {
		Output string
		Usage  model.Usage
	}
	if err := json.Unmarshal(body, &res); err != nil || len(res.Output) != 100000 {
		t.Fatalf("stored answer: %d bytes of output, %v", len(res.Output), err)
	}
	if half := job.Nanocents(2*res.Usage.InputTokens + 4*res.Usage.OutputTokens); j.Cost != half || f.prov.Generations(id) != 1 {
		t.Fatalf("cost %v, %d generations: want %v at the batch price, one generation", j.Cost, f.prov.Generations(id), half)
	}
}
