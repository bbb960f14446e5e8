package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// TestAQuarantinedInputIsRefusedAndCostsNothing: once a job's input failed
// deterministically, a new job of the same tenant with the same input on
// the same route is a 422 naming that job, with nothing recorded or sent;
// another tenant's is not refused; an idempotent repeat of a job accepted
// before is still a repeat; an expired or lifted quarantine refuses
// nothing.
func TestAQuarantinedInputIsRefusedAndCostsNothing(t *testing.T) {
	e := newEnv(t)
	qs := memstore.NewQuarantines()
	e.h.quarantine = qs
	before := e.do(t, createReq(t, "before", simpleBody))
	if before.StatusCode != http.StatusAccepted {
		t.Fatalf("first create: %d %s", before.StatusCode, before.Body)
	}
	v := decodeView(t, before)
	rec, err := e.store.Get(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := job.Quarantine{Tenant: rec.Tenant, Model: rec.Model, InputHash: rec.InputHash, Class: job.ContextLengthExceeded,
		JobID: "job_earlier", At: t0, Until: t0.Add(time.Hour)}
	if err := qs.Quarantine(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	records, sends := e.store.Len(), e.queue.count()

	resp := e.do(t, createReq(t, "after", simpleBody))
	p := decodeProblem(t, resp)
	if resp.StatusCode != http.StatusUnprocessableEntity || p.Code != wire.CodeInputQuarantined || p.Field != "input" ||
		!strings.Contains(p.Detail, "job_earlier") || !strings.Contains(p.Detail, "context_length_exceeded") {
		t.Fatalf("quarantined: %d %+v", resp.StatusCode, p)
	}
	if e.store.Len() != records || e.queue.count() != sends {
		t.Fatalf("a refused create wrote %d records and sent %d messages", e.store.Len()-records, e.queue.count()-sends)
	}
	if resp := e.do(t, createReq(t, "before", simpleBody)); resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("the repeat of a job accepted before: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.do(t, asTenant(createReq(t, "after", simpleBody), "tenant-other")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("another tenant's same input: %d %s", resp.StatusCode, resp.Body)
	}
	e.clock.Advance(time.Hour)
	if resp := e.do(t, createReq(t, "expired", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after the quarantine's hour: %d %s", resp.StatusCode, resp.Body)
	}
	q.Until = e.clock.Now().Add(time.Hour)
	_ = qs.Quarantine(t.Context(), q)
	_ = qs.Lift(t.Context(), q.Key())
	if resp := e.do(t, createReq(t, "lifted", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after a lift: %d %s", resp.StatusCode, resp.Body)
	}
}

// failingQuarantines is a quarantine store that never answers.
type failingQuarantines struct{}

func (failingQuarantines) Quarantined(context.Context, job.QuarantineKey, time.Time) (job.Quarantine, bool, error) {
	return job.Quarantine{}, false, &job.Error{Code: job.CodeUnavailable, Message: "throttled", Err: errors.New("ProvisionedThroughputExceeded")}
}

// TestAQuarantineStoreThatFailsRefusesNothing: the check saves money, it
// guards nothing, so a create goes on when it cannot be made.
func TestAQuarantineStoreThatFailsRefusesNothing(t *testing.T) {
	e := newEnv(t)
	e.h.quarantine = failingQuarantines{}
	if resp := e.do(t, createReq(t, "k", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	if !strings.Contains(e.logs.String(), "the quarantine check failed") {
		t.Fatalf("logs: %s", e.logs)
	}
}
