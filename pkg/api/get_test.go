package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestPollAfter(t *testing.T) {
	tests := []struct {
		age  time.Duration
		want time.Duration
	}{
		{-time.Minute, time.Second}, // clock skew: never below one second
		{0, time.Second},
		{7 * time.Second, time.Second},
		{20 * time.Second, 5 * time.Second},
		{41 * time.Second, 10 * time.Second},
		{2 * time.Minute, 30 * time.Second},
		{24 * time.Hour, 30 * time.Second},
	}
	for _, tc := range tests {
		if got := pollAfter(tc.age); got != tc.want {
			t.Errorf("pollAfter(%s) = %s, want %s", tc.age, got, tc.want)
		}
	}
}

func TestGetHeadersGrowWithAge(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	steps := []struct {
		advance time.Duration
		retry   string
	}{{0, "1"}, {40 * time.Second, "10"}, {10 * time.Minute, "30"}}
	for _, s := range steps {
		e.clock.Advance(s.advance)
		resp := e.do(t, request(t, "GET", "/jobs/"+id, ""))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
		}
		h := resp.Headers
		if h["ETag"] != `"1"` || h["Cache-Control"] != "no-store" || h["Retry-After"] != s.retry {
			t.Errorf("after %s: headers %v, want Retry-After %s", s.advance, h, s.retry)
		}
		if v := decodeView(t, resp); v.ID != id || v.State != job.Queued {
			t.Errorf("view = %+v", v)
		}
	}
}

func TestGetNotModified(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	e.clock.Advance(20 * time.Second)
	for _, inm := range []string{`"1"`, `*`, `"0", "1"`, `W/"1"`, ` "7",W/"1" `} {
		ev := request(t, "GET", "/jobs/"+id, "")
		ev.Headers["if-none-match"] = inm
		resp := e.do(t, ev)
		if resp.StatusCode != http.StatusNotModified || resp.Body != "" {
			t.Fatalf("If-None-Match %s: status %d, body %q", inm, resp.StatusCode, resp.Body)
		}
		h := resp.Headers
		if h["ETag"] != `"1"` || h["Cache-Control"] != "no-store" || h["Retry-After"] != "5" || h["Content-Type"] != "" {
			t.Errorf("If-None-Match %s: headers %v", inm, h)
		}
	}
	ev := request(t, "GET", "/jobs/"+id, "")
	ev.Headers["If-None-Match"] = `"2"`
	if resp := e.do(t, ev); resp.StatusCode != http.StatusOK {
		t.Errorf("stale If-None-Match: status %d", resp.StatusCode)
	}
}

func TestGetTerminalJob(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	ctx := context.Background()
	now := e.clock.Now()
	// One failed attempt, then a success: the failure shows in attempts and
	// cost, never in error_class.
	if _, err := e.store.Claim(ctx, job.Claim{ID: id, Owner: "w0", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Release(ctx, job.Release{ID: id, Owner: "w0", Now: now, Cost: 1, Class: job.RateLimited}); err != nil {
		t.Fatal(err)
	}
	resp := e.do(t, request(t, "GET", "/jobs/"+id, ""))
	if v := decodeView(t, resp); v.ErrorClass == nil || *v.ErrorClass != job.RateLimited || v.Attempts != 1 {
		t.Errorf("released view = %+v", v)
	}
	e.succeed(t, id)

	resp = e.do(t, request(t, "GET", "/jobs/"+id, ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
	}
	if _, ok := resp.Headers["Retry-After"]; ok {
		t.Errorf("Retry-After on a terminal job: %v", resp.Headers)
	}
	if resp.Headers["ETag"] != `"5"` {
		t.Errorf("ETag = %q, want \"5\"", resp.Headers["ETag"])
	}
	v := decodeView(t, resp)
	if v.State != job.Succeeded || v.ErrorClass != nil || v.Attempts != 2 || v.Progress != 1 ||
		string(v.Result) != doneResult || v.ResultModel != "fake-1" || v.Version != 5 {
		t.Errorf("view = %+v", v)
	}
	for _, s := range []string{`"cost_cents":0.420000001,`, `"error_class":null`, `"result_model":"fake-1"`} {
		if !strings.Contains(resp.Body, s) {
			t.Errorf("body lacks %s: %s", s, resp.Body)
		}
	}

	ev := request(t, "GET", "/jobs/"+id, "")
	ev.Headers["if-none-match"] = `"5"`
	resp = e.do(t, ev)
	if _, ok := resp.Headers["Retry-After"]; resp.StatusCode != http.StatusNotModified || ok {
		t.Errorf("304 of a terminal job: %d %v", resp.StatusCode, resp.Headers)
	}
}

func TestGetRefusesMalformedIDs(t *testing.T) {
	e := newEnv(t)
	store := &stubStore{} // any call panics: a malformed id never reaches the store
	e.h = e.handler(store)
	valid := job.NewID("jwt:tenant-a", "k")
	for _, id := range []string{
		"nope", "job_", strings.ToUpper(valid), valid + "a", valid[:len(valid)-1],
		"job_" + strings.Repeat("a", 500), "job_aaaaaaaaaaaaaaaaaaaaaaaaa%61", "job_aaaaaaaaaaaaaaaaaaaaaaaaa1",
	} {
		for _, path := range []string{"/jobs/" + id, "/jobs/" + id + "/cancel"} {
			method := "GET"
			if strings.HasSuffix(path, "/cancel") {
				method = "POST"
			}
			resp := e.do(t, request(t, method, path, ""))
			wantProblem(t, resp, http.StatusBadRequest, CodeInvalidRequest, "id")
		}
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("store called %d times", n)
	}
}

func TestGetHidesOtherTenantsJobs(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	unknown := e.do(t, request(t, "GET", "/jobs/"+job.NewID("jwt:tenant-a", "never"), ""))
	wantProblem(t, unknown, http.StatusNotFound, CodeNotFound, "")
	other := e.do(t, asTenant(request(t, "GET", "/jobs/"+id, ""), "tenant-b"))
	wantProblem(t, other, http.StatusNotFound, CodeNotFound, "")
	if other.Body != unknown.Body || len(other.Headers) != len(unknown.Headers) {
		t.Errorf("another tenant's job answers differently from an unknown one:\n%v %s\n%v %s",
			other.Headers, other.Body, unknown.Headers, unknown.Body)
	}
	if strings.Contains(other.Body, id) {
		t.Errorf("404 body names the job: %s", other.Body)
	}
}

func TestGetUnencodableRecordIsInternal(t *testing.T) {
	e := newEnv(t)
	id := job.NewID("jwt:tenant-a", "k")
	e.h = e.handler(&stubStore{get: func(string) (job.Job, error) {
		return job.Job{ID: id, Tenant: "jwt:tenant-a", State: job.Succeeded, Result: json.RawMessage(`{broken`)}, nil
	}})
	resp := e.do(t, request(t, "GET", "/jobs/"+id, ""))
	wantProblem(t, resp, http.StatusInternalServerError, CodeInternal, "")
}
