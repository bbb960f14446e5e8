package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

func TestCancelQueuedTwice(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	e.clock.Advance(time.Second)
	var first string
	for i := range 2 {
		resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("cancel %d: status %d, body %s", i, resp.StatusCode, resp.Body)
		}
		v := decodeView(t, resp)
		if v.State != job.Abandoned || v.ErrorClass == nil || *v.ErrorClass != job.Cancelled || v.Version != 2 ||
			!v.UpdatedAt.Equal(t0.Add(time.Second)) || !strings.Contains(resp.Body, `"updated_at":"2026-01-01T12:00:01.000Z"`) {
			t.Errorf("cancel %d view = %+v", i, v)
		}
		if i == 0 {
			first = resp.Body
		} else if resp.Body != first {
			t.Errorf("second cancel answers another view:\n%s\n%s", first, resp.Body)
		}
	}
	j, err := e.store.Get(context.Background(), id)
	if err != nil || j.State != job.Abandoned || !j.ExpiresAt.Equal(t0.Add(time.Second+90*24*time.Hour)) {
		t.Errorf("record = %+v, %v", j, err)
	}
	// A cancelled job is terminal: GET stops advertising Retry-After.
	if resp := e.do(t, request(t, "GET", "/jobs/"+id, "")); resp.Headers["Retry-After"] != "" {
		t.Errorf("Retry-After on a cancelled job: %v", resp.Headers)
	}
}

func TestCancelRunning(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	now := e.clock.Now()
	if _, err := e.store.Claim(context.Background(), job.Claim{ID: id, Owner: "w1", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
	if v := decodeView(t, resp); resp.StatusCode != http.StatusOK || v.State != job.Abandoned || v.Attempts != 1 {
		t.Errorf("status %d, view %+v", resp.StatusCode, v)
	}
}

func TestCancelFinishedIsConflict(t *testing.T) {
	t.Run("succeeded", func(t *testing.T) {
		e := newEnv(t)
		id := e.mustCreate(t, "k")
		e.succeed(t, id)
		resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
		wantProblem(t, resp, http.StatusConflict, wire.CodeAlreadyFinished, "")
	})
	t.Run("failed", func(t *testing.T) {
		e := newEnv(t)
		id := e.mustCreate(t, "k")
		if _, err := e.store.End(context.Background(), job.End{ID: id, Now: e.clock.Now(), Class: job.Auth}); err != nil {
			t.Fatal(err)
		}
		resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
		wantProblem(t, resp, http.StatusConflict, wire.CodeAlreadyFinished, "")
	})
	t.Run("abandoned past its deadline", func(t *testing.T) {
		e := newEnv(t)
		id := e.mustCreate(t, "k")
		if _, err := e.store.End(context.Background(), job.End{ID: id, Now: e.clock.Now(), Class: job.DeadlineExceeded}); err != nil {
			t.Fatal(err)
		}
		resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
		if v := decodeView(t, resp); resp.StatusCode != http.StatusOK || *v.ErrorClass != job.DeadlineExceeded {
			t.Errorf("status %d, view %+v", resp.StatusCode, v)
		}
	})
}

func TestCancelHidesOtherTenantsJobs(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	unknown := e.do(t, request(t, "POST", "/jobs/"+job.NewID("jwt:tenant-a", "never")+"/cancel", ""))
	wantProblem(t, unknown, http.StatusNotFound, wire.CodeNotFound, "")
	other := e.do(t, asTenant(request(t, "POST", "/jobs/"+id+"/cancel", ""), "tenant-b"))
	wantProblem(t, other, http.StatusNotFound, wire.CodeNotFound, "")
	if other.Body != unknown.Body {
		t.Errorf("bodies differ:\n%s\n%s", other.Body, unknown.Body)
	}
	if j, _ := e.store.Get(context.Background(), id); j.State != job.Queued || j.Version != 1 {
		t.Errorf("another tenant changed the job: %+v", j)
	}
}

// A store whose tenant condition refused the write may carry the other
// tenant's record in its Conflict (DynamoDB's ALL_OLD): still a 404.
func TestCancelConflictOnOtherTenantsRecord(t *testing.T) {
	e := newEnv(t)
	id := job.NewID("jwt:tenant-b", "k")
	e.h = e.handler(&stubStore{cancel: func(job.Cancel) (job.Job, error) {
		rec := job.Job{ID: id, Tenant: "jwt:tenant-b", State: job.Queued, Version: 1}
		return job.Job{}, &job.Error{Code: job.CodeConflict, Job: &rec}
	}})
	resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
	wantProblem(t, resp, http.StatusNotFound, wire.CodeNotFound, "")
}

// A refused cancel whose record is not terminal means the record changed in
// between; the handler tries again, a bounded number of times.
func TestCancelRetriesAChangingRecord(t *testing.T) {
	e := newEnv(t)
	id := job.NewID("jwt:tenant-a", "k")
	rec := job.Job{ID: id, Tenant: "jwt:tenant-a", State: job.Queued, Version: 1}
	store := &stubStore{cancel: func(job.Cancel) (job.Job, error) {
		return job.Job{}, &job.Error{Code: job.CodeConflict, Job: &rec}
	}}
	e.h = e.handler(store)
	resp := e.do(t, request(t, "POST", "/jobs/"+id+"/cancel", ""))
	wantProblem(t, resp, http.StatusInternalServerError, wire.CodeInternal, "")
	if n := store.calls.Load(); n != cancelTries {
		t.Errorf("store called %d times, want %d", n, cancelTries)
	}
}
