package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// TestACreateOverTheTenantsQueuedLimitIsRefused: a tenant held to 2 queued
// jobs has a third create answered 429 too_many_queued with Retry-After,
// with nothing recorded or sent; an idempotent repeat of an accepted job
// is still a repeat and takes no place; another tenant is not refused;
// a place frees when a queued job is cancelled or the worker starts it.
func TestACreateOverTheTenantsQueuedLimitIsRefused(t *testing.T) {
	e := newEnv(t)
	slots := memstore.NewSlots()
	e.h.queued, e.h.queuedMax = slots, func(tenant string) int {
		if tenant == "jwt:tenant-other" {
			return 0
		}
		return 2
	}
	first := decodeView(t, e.do(t, createReq(t, "one", simpleBody)))
	if resp := e.do(t, createReq(t, "two", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("second create under the limit: %d %s", resp.StatusCode, resp.Body)
	}
	records, sends := e.store.Len(), e.queue.count()
	resp := e.do(t, createReq(t, "three", simpleBody))
	p := decodeProblem(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || p.Code != wire.CodeTooManyQueued || resp.Headers["Retry-After"] != seconds(e.h.retryAfter) {
		t.Fatalf("over the limit: %d %+v %v", resp.StatusCode, p, resp.Headers)
	}
	if e.store.Len() != records || e.queue.count() != sends {
		t.Fatalf("a refused create wrote %d records and sent %d messages", e.store.Len()-records, e.queue.count()-sends)
	}
	if resp := e.do(t, createReq(t, "one", simpleBody)); resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("the repeat of an accepted job at the limit: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.do(t, asTenant(createReq(t, "three", simpleBody), "tenant-other")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a tenant with no limit: %d %s", resp.StatusCode, resp.Body)
	}

	if resp := e.do(t, request(t, "POST", "/jobs/"+first.ID+"/cancel", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.do(t, createReq(t, "three", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after a queued job was cancelled: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.do(t, createReq(t, "four", simpleBody)); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("at the limit again: %d %s", resp.StatusCode, resp.Body)
	}
	// The worker gives a place back when the job's first call may start
	// (pkg/worker, admission.started): the entry, from the record.
	second, err := e.store.Get(t.Context(), job.NewID("jwt:tenant-a", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if err := slots.Leave(t.Context(), job.Slot{Tenant: second.Tenant, JobID: second.ID, Until: second.Deadline}); err != nil {
		t.Fatal(err)
	}
	if resp := e.do(t, createReq(t, "four", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after the worker started a queued job: %d %s", resp.StatusCode, resp.Body)
	}
}

// TestACancelOfAClaimedJobFreesItsQueuedPlace: a worker that claims a
// queued job only to defer it (its tenant has its limit in flight) holds
// it as attempt 1 for a moment. A cancel that lands then leaves the
// worker's defer refused, so the worker never gives the place back; the
// cancel does, or the tenant stays at its limit until the job's deadline
// (an e2e run hit exactly this).
func TestACancelOfAClaimedJobFreesItsQueuedPlace(t *testing.T) {
	e := newEnv(t)
	e.h.queued, e.h.queuedMax = memstore.NewSlots(), func(string) int { return 1 }
	first := decodeView(t, e.do(t, createReq(t, "one", simpleBody)))
	now := e.clock.Now()
	if _, err := e.store.Claim(t.Context(), job.Claim{ID: first.ID, Owner: "w1", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if resp := e.do(t, request(t, "POST", "/jobs/"+first.ID+"/cancel", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.do(t, createReq(t, "two", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after a claimed job was cancelled: %d %s", resp.StatusCode, resp.Body)
	}
}

// failingSlots is a slots store that never answers.
type failingSlots struct{}

func (failingSlots) Enter(context.Context, job.Slot) (bool, error) {
	return false, &job.Error{Code: job.CodeUnavailable, Message: "throttled", Err: errors.New("ProvisionedThroughputExceeded")}
}
func (failingSlots) Leave(context.Context, job.Slot) error { return errors.New("no") }

// TestAQueuedLimitThatFailsRefusesNothing: the limit bounds a backlog, it
// guards no money, so a create goes on when it cannot be checked.
func TestAQueuedLimitThatFailsRefusesNothing(t *testing.T) {
	e := newEnv(t)
	e.h.queued, e.h.queuedMax = failingSlots{}, func(string) int { return 1 }
	for _, key := range []string{"one", "two"} {
		if resp := e.do(t, createReq(t, key, simpleBody)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("create %s with the slots store down: %d %s", key, resp.StatusCode, resp.Body)
		}
	}
}
