package notifier_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// A job the worker abandoned for its tenant's spend limit (its deadline
// came while it waited for the balance: pkg/worker's
// TestAJobDeferredForSpendUntilItsDeadlineIsAbandonedSpendLimit) is
// delivered as job.abandoned with error_class spend_limit, not
// deadline_exceeded: the receiver can tell the limit kept it from running.
func TestAJobAbandonedForSpendIsDeliveredWithItsClass(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, f.key())
	j := job.Job{ID: job.NewID("tenant", "spent"), Tenant: "tenant", RequestKey: "spent", InputHash: "sha256:spent", Model: "default",
		State: job.Abandoned, ErrorClass: job.SpendLimit, ErrorDetail: "the tenant's spend limit for the day is reached",
		MaxAttempts: 3, Budget: job.Cents(5), Deadline: t0.Add(-time.Second), Version: 5,
		CreatedAt: t0.Add(-time.Minute), UpdatedAt: t0.Add(-time.Second), Callback: job.Callback{URL: r.srv.URL + "/hook"}}
	if _, err := f.store.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	if resp := deliver(t, f, message(j.ID, 5, job.Abandoned, 1)); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	got := r.deliveries()
	if len(got) != 1 || got[0].verified != nil {
		t.Fatalf("deliveries %d, verified %v", len(got), got)
	}
	var ev wire.WebhookEvent
	if err := json.Unmarshal(got[0].body, &ev); err != nil || ev.Type != "job.abandoned" || ev.Data.ID != j.ID ||
		ev.Data.State != job.Abandoned || ev.Data.Class() != job.SpendLimit {
		t.Fatalf("event %+v %v", ev, err)
	}
	var raw struct {
		Data struct {
			ErrorClass string `json:"error_class"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &raw); err != nil || raw.Data.ErrorClass != "spend_limit" {
		t.Fatalf("the body's data.error_class = %q (%v), want spend_limit", raw.Data.ErrorClass, err)
	}
}
