package collector_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// answers is an in-memory payload store that refuses puts while down.
type answers struct {
	mu      sync.Mutex
	objects map[string][]byte
	down    bool
}

func (s *answers) Put(_ context.Context, key string, body []byte, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return &job.Error{Code: job.CodeUnavailable, Message: "the payload store is unavailable"}
	}
	s.objects[key] = append([]byte(nil), body...)
	return nil
}

// TestALargeBatchAnswerIsRecordedByRef: a batch answer over the inline
// limit is put in the payload store and recorded by its ref at the batch
// price; while the store refuses, the run fails and the item stays in
// the batch, recorded by the next run, generated once.
func TestALargeBatchAnswerIsRecordedByRef(t *testing.T) {
	f := setup(t, 0, nil)
	s := &answers{objects: map[string][]byte{}, down: true}
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
	s.mu.Lock()
	s.down = false
	s.mu.Unlock()
	f.run()
	j := f.get(id)
	if j.State != job.Succeeded || j.ResultRef == nil || len(j.Result) != 0 || j.ResultLane != job.Batch {
		t.Fatalf("job %s, ref %+v, %d bytes inline: want succeeded by ref in the batch lane", j.State, j.ResultRef, len(j.Result))
	}
	body := s.objects[j.ResultRef.Key]
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
