package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// TestATenantAtItsLimitInFlightWaitsAndOthersRun: with tenant t1 allowed
// one job in flight, of its two jobs delivered together one runs and the
// other is deferred uncounted (no call, nothing held), while another
// tenant's job runs beside them; once the first has finished its slot is
// free, and the deferred job runs when it comes back.
func TestATenantAtItsLimitInFlightWaitsAndOthersRun(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, call int) (model.Response, error) {
		time.Sleep(100 * time.Millisecond)
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3}}, nil
	})
	slots := memstore.NewSlots()
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Slots = slots
		c.InFlight = func(tenant string) int {
			if tenant == "t1" {
				return 1
			}
			return 0
		}
	})
	a, b := f.create("k1", nil), f.create("k2", nil)
	other := f.create("k3", func(j *job.Job) { j.Tenant, j.ID = "t2", job.NewID("t2", "k3") })
	f.deliver(body(a.ID), body(b.ID), body(other.ID))
	ran, waited := f.get(a.ID), f.get(b.ID)
	if ran.State == job.Queued {
		ran, waited = waited, ran
	}
	if ran.State != job.Succeeded || f.get(other.ID).State != job.Succeeded {
		t.Fatalf("t1's first job %s, t2's job %s: want both succeeded", ran.State, f.get(other.ID).State)
	}
	if waited.State != job.Queued || waited.Attempts != 0 || waited.Held != 0 || f.prov.calls[waited.ID] != 0 || waited.NotBefore.IsZero() {
		t.Fatalf("t1's second job: %+v, %d calls", waited, f.prov.calls[waited.ID])
	}
	time.Sleep(time.Until(waited.NotBefore))
	f.deliver(body(waited.ID))
	if got := f.get(waited.ID); got.State != job.Succeeded || got.Attempts != 1 {
		t.Fatalf("the deferred job once t1's slot was free: %+v", got)
	}
}

// TestAJobIsQueuedUntilItsFirstCallMayStart: the queued place the API took
// at create (AIJOBS_TENANT_QUEUED) is given back when the job's first
// call may go, not when it is claimed: a job deferred for its tenant's
// limit in flight is still queued, and leaves once it runs.
func TestAJobIsQueuedUntilItsFirstCallMayStart(t *testing.T) {
	f := setup(t, func(ctx context.Context, r model.Request, call int) (model.Response, error) {
		time.Sleep(100 * time.Millisecond)
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3}}, nil
	})
	inFlight, queued := memstore.NewSlots(), memstore.NewSlots()
	one := func(string) int { return 1 }
	f.w = f.newWorker(f.store, func(c *worker.Config) {
		c.Slots, c.InFlight = inFlight, one
		c.Queued, c.QueuedLimit = queued, func(string) int { return 10 }
	})
	a, b := f.create("k1", nil), f.create("k2", nil)
	for _, j := range []job.Job{a, b} {
		if ok, err := queued.Enter(t.Context(), job.Slot{Tenant: j.Tenant, JobID: j.ID, Now: time.Now(), Until: j.Deadline, Limit: 10}); !ok || err != nil {
			t.Fatalf("enter %s: %v %v", j.ID, ok, err)
		}
	}
	f.deliver(body(a.ID), body(b.ID))
	waited := f.get(b.ID)
	if waited.State != job.Queued {
		waited = f.get(a.ID)
	}
	if waited.State != job.Queued || queued.Len(waited.Tenant) != 1 {
		t.Fatalf("after one ran and one was deferred: deferred %s, %d queued entries, want 1", waited.State, queued.Len(waited.Tenant))
	}
	time.Sleep(time.Until(waited.NotBefore))
	f.deliver(body(waited.ID))
	if got := f.get(waited.ID); got.State != job.Succeeded || queued.Len(got.Tenant) != 0 {
		t.Fatalf("the deferred job ran: %s, %d queued entries left, want 0", got.State, queued.Len(got.Tenant))
	}
}
