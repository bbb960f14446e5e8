package collector_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
)

// TestADeterministicBatchItemQuarantinesTheInput: a batch item that ends
// its job with a class the worker quarantines on (content_filtered) puts
// the tenant's input on its route in quarantine, naming the job, as the
// worker's end does, so the API's create (which asks Quarantined) refuses
// a new job with that input hash; an item that fails for the moment
// quarantines nothing.
func TestADeterministicBatchItemQuarantinesTheInputAndCountsItsEnd(t *testing.T) {
	f := setup(t, 0, nil)
	qs := memstore.NewQuarantines()
	m := &meter{}
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue, Metrics: m,
		Providers: map[string]model.Provider{"f": f.prov}, Routes: map[string]job.Route{"default": f.route},
		Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}, Quarantine: qs, QuarantineFor: time.Hour})
	retry := f.enlisted("r", "[[fake:fail=provider_error]] flaky", time.Now().Add(time.Hour))
	end := f.enlisted("e", "[[fake:fail=content_filtered]] bad", time.Now().Add(time.Hour))
	f.run()
	f.run()
	if got := f.get(end.ID); got.State != job.Failed || got.ErrorClass != job.ContentFiltered {
		t.Fatalf("deterministic item: %+v, want failed", got)
	}
	q, ok, err := qs.Quarantined(t.Context(), job.QuarantineKey{Tenant: "t1", Model: "default", InputHash: end.InputHash}, time.Now())
	if err != nil || !ok || q.JobID != end.ID || q.Class != job.ContentFiltered || q.Until.Sub(q.At) != time.Hour {
		t.Fatalf("quarantine %+v %v %v, want the failed item's input held for an hour", q, ok, err)
	}
	if got := f.get(retry.ID); got.State != job.Queued {
		t.Fatalf("retryable item: %+v, want queued again", got)
	}
	if all, _ := qs.List(t.Context(), "", time.Now()); len(all) != 1 {
		t.Errorf("a failure of the moment quarantined its input: %+v", all)
	}
	// Counted as the worker's ends are, so JobsFailed's alarms see it.
	if got := m.count("JobsFailed"); got != 1 {
		t.Errorf("JobsFailed %v, want the one item that ended", got)
	}
}
