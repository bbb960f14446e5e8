package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// TestADeterministicFailureQuarantinesTheInput: a job the provider
// refuses for its input (content_filtered) ends failed and puts its
// tenant's input on its route in quarantine for QuarantineFor, naming the
// job; a job that fails for the moment (overloaded, attempts used up)
// quarantines nothing.
func TestADeterministicFailureQuarantinesTheInput(t *testing.T) {
	class := job.ContentFiltered
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: class, Usage: model.Usage{InputTokens: 42}}
	})
	qs := memstore.NewQuarantines()
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Quarantine, c.QuarantineFor = qs, time.Hour })
	j := f.create("k1", func(j *job.Job) { j.InputHash = "sha256:bad" })
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Failed || got.ErrorClass != job.ContentFiltered {
		t.Fatalf("job %+v", got)
	}
	q, ok, err := qs.Quarantined(t.Context(), job.QuarantineKey{Tenant: "t1", Model: "default", InputHash: "sha256:bad"}, time.Now())
	if err != nil || !ok || q.JobID != j.ID || q.Class != job.ContentFiltered || q.Until.Sub(q.At) != time.Hour {
		t.Fatalf("quarantine %+v %v %v", q, ok, err)
	}

	class = job.Overloaded
	k := f.create("k2", func(j *job.Job) { j.InputHash, j.MaxAttempts = "sha256:busy", 1 })
	f.deliver(body(k.ID))
	if got := f.get(k.ID); got.State != job.Failed || got.ErrorClass != job.Overloaded {
		t.Fatalf("job %+v", got)
	}
	if all, _ := qs.List(t.Context(), "", time.Now()); len(all) != 1 {
		t.Fatalf("a failure of the moment quarantined its input: %+v", all)
	}
}

// refusingQuarantine never keeps anything.
type refusingQuarantine struct{}

func (refusingQuarantine) Quarantine(context.Context, job.Quarantine) error {
	return errors.New("quarantine table unavailable")
}

// TestAQuarantineThatFailsLeavesTheJobEnded: the job's end is recorded
// whatever the quarantine store does.
func TestAQuarantineThatFailsLeavesTheJobEnded(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{}, &model.Error{Class: job.ContextLengthExceeded, Usage: model.Usage{InputTokens: 7}}
	})
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Quarantine, c.QuarantineFor = refusingQuarantine{}, time.Hour })
	j := f.create("k1", nil)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("the message must be deleted: %v", failedIDs(r))
	}
	if got := f.get(j.ID); got.State != job.Failed || got.Cost != 7 {
		t.Fatalf("job %+v", got)
	}
}
