package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

func TestPollAfter(t *testing.T) {
	marks := []time.Duration{10 * time.Second, 14 * time.Second, 16 * time.Second} // p50, p90, p99
	tests := []struct {
		age   time.Duration
		marks []time.Duration
		want  time.Duration
	}{
		// No marks yet: a quarter of the age.
		{-time.Minute, nil, time.Second}, // clock skew: never below one second
		{0, nil, time.Second},
		{7 * time.Second, nil, time.Second},
		{20 * time.Second, nil, 5 * time.Second},
		{41 * time.Second, nil, 10 * time.Second},
		{2 * time.Minute, nil, 30 * time.Second},
		{24 * time.Hour, nil, 30 * time.Second},
		// Before the route's median: the time left until it.
		{0, marks, 10 * time.Second},
		{3 * time.Second, marks, 7 * time.Second},
		{9500 * time.Millisecond, marks, time.Second},
		{-time.Minute, marks, 10 * time.Second}, // skew: as if just created
		{0, []time.Duration{2 * time.Minute, 3 * time.Minute}, 30 * time.Second},
		// Past it: the time left to the 90th percentile.
		{10 * time.Second, marks, 4 * time.Second},
		{13 * time.Second, marks, time.Second},
		// Past it: the time left to the 99th.
		{14 * time.Second, marks, 2 * time.Second},
		// Past all three: a quarter of the age again.
		{16 * time.Second, marks, 4 * time.Second},
		{20 * time.Second, marks, 5 * time.Second},
	}
	for _, tc := range tests {
		if got := pollAfter(tc.age, tc.marks); got != tc.want {
			t.Errorf("pollAfter(%s, %v) = %s, want %s", tc.age, tc.marks, got, tc.want)
		}
	}
}

// routed is an env whose handler knows the default route, so it learns
// the route's latency.
func routed(t *testing.T) *env {
	e := newEnv(t)
	s := settings.Defaults()
	e.h = New(Config{
		Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: map[string]job.Route{"default": {}}, Callbacks: testCallbacks,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
	})
	return e
}

// finish creates a job that succeeds after took, and polls it polls times
// once finished.
func (e *env) finish(t *testing.T, key string, took time.Duration, polls int) {
	t.Helper()
	id := e.mustCreate(t, key)
	e.clock.Advance(took)
	e.succeed(t, id)
	for range polls {
		if resp := e.do(t, request(t, "GET", "/jobs/"+id, "")); resp.StatusCode != http.StatusOK {
			t.Fatalf("poll: status %d", resp.StatusCode)
		}
	}
}

func TestRetryAfterTracksTheRoutesMeasuredLatency(t *testing.T) {
	e := routed(t)
	retryAfter := func(resp events.APIGatewayV2HTTPResponse) string {
		t.Helper()
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
		}
		return resp.Headers["Retry-After"]
	}
	// Four finished jobs, each polled ten times once done: one sample
	// each, too few for a median, so the age rule answers.
	for i := range 4 {
		e.finish(t, fmt.Sprintf("a%d", i), 12*time.Second, 10)
	}
	if got := retryAfter(e.do(t, createReq(t, "new1", simpleBody))); got != "1" {
		t.Fatalf("Retry-After of a new job with four samples = %s, want the age rule's 1", got)
	}
	// A fifth job (18 s) makes the median 12 s and the 90th and 99th
	// percentiles 18 s.
	e.finish(t, "a4", 18*time.Second, 1)
	created := e.do(t, createReq(t, "new2", simpleBody))
	if got := retryAfter(created); got != "12" {
		t.Fatalf("Retry-After of a new job = %s, want the route's median 12", got)
	}
	id := decodeView(t, created).ID
	e.clock.Advance(4 * time.Second)
	if got := retryAfter(e.do(t, request(t, "GET", "/jobs/"+id, ""))); got != "8" {
		t.Fatalf("Retry-After at 4 s = %s, want the 8 s left to the median", got)
	}
	e.clock.Advance(8500 * time.Millisecond)
	if got := retryAfter(e.do(t, request(t, "GET", "/jobs/"+id, ""))); got != "5" {
		t.Fatalf("Retry-After at 12.5 s, past the median = %s, want the 5.5 s left to the 90th percentile", got)
	}
	e.clock.Advance(12 * time.Second)
	if got := retryAfter(e.do(t, request(t, "GET", "/jobs/"+id, ""))); got != "6" {
		t.Fatalf("Retry-After at 24.5 s, past both marks = %s, want a quarter of the age", got)
	}
	// A replayed job is no sample (its record does not show when the
	// replay restarted it), nor is a job with a callback delivery (its
	// updated_at moved with the delivery's record), nor a job of a route
	// the API does not know.
	before := e.h.latency.marks("default")
	late := t0.Add(time.Hour)
	e.h.latency.observe(job.Job{ID: "r", Model: "default", State: job.Succeeded, Replays: 1, CreatedAt: t0, UpdatedAt: late})
	e.h.latency.observe(job.Job{ID: "c", Model: "default", State: job.Succeeded, Deliveries: job.Deliveries{Attempts: 1}, CreatedAt: t0, UpdatedAt: late})
	if after := e.h.latency.marks("default"); !slices.Equal(after, before) {
		t.Fatalf("marks moved from %v to %v on jobs that are no samples", before, after)
	}
	e.h.latency.observe(job.Job{ID: "u", Model: "other", State: job.Succeeded, CreatedAt: t0, UpdatedAt: late})
	if m := e.h.latency.marks("other"); m != nil {
		t.Fatal("an unknown route was learned: memory would grow with any model name")
	}
}

// A poll reads with a peek and reads again consistently only when the peek
// cannot be the answer.
func TestGetPeeksAndReadsConsistentlyOnlyWhenThePeekCannotAnswer(t *testing.T) {
	e := newEnv(t)
	id := e.mustCreate(t, "k")
	created, err := e.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(v int64) job.Job {
		j := created
		j.Version = v
		return j
	}
	notFound := func(string) (job.Job, error) { return job.Job{}, job.NotFound() }
	at := func(v int64) func(string) (job.Job, error) {
		return func(string) (job.Job, error) { return rec(v), nil }
	}
	for _, tc := range []struct {
		name       string
		peek, get  func(string) (job.Job, error) // get nil: never read consistently
		inm        string
		wantStatus int
		wantETag   string
	}{
		{"fresh peek", at(3), nil, "", http.StatusOK, `"3"`},
		{"peek matches the caller's version", at(3), nil, `"3"`, http.StatusNotModified, `"3"`},
		{"the caller's version is older", at(3), nil, `"2"`, http.StatusOK, `"3"`},
		{"a job created a moment ago", notFound, at(1), "", http.StatusOK, `"1"`},
		{"unknown for both", notFound, notFound, "", http.StatusNotFound, ""},
		{"the peek is older than the caller's version", at(3), at(4), `"4"`, http.StatusNotModified, `"4"`},
		{"older than one of the caller's versions", at(3), at(5), `W/"2", "4"`, http.StatusOK, `"5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &stubStore{peek: tc.peek, get: tc.get}
			if tc.get == nil {
				store.get = func(string) (job.Job, error) { panic("read consistently") }
			}
			e.h = e.handler(store)
			ev := request(t, "GET", "/jobs/"+id, "")
			if tc.inm != "" {
				ev.Headers["If-None-Match"] = tc.inm
			}
			resp := e.do(t, ev)
			if resp.StatusCode != tc.wantStatus || resp.Headers["ETag"] != tc.wantETag {
				t.Fatalf("status %d, ETag %q, want %d %q (body %s)", resp.StatusCode, resp.Headers["ETag"], tc.wantStatus, tc.wantETag, resp.Body)
			}
		})
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
	if _, err := e.store.Release(ctx, job.Release{ID: id, Owner: "w0", Now: now, Settlement: job.Settlement{Cost: 1}, Class: job.RateLimited}); err != nil {
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
			wantProblem(t, resp, http.StatusBadRequest, wire.CodeInvalidRequest, "id")
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
	wantProblem(t, unknown, http.StatusNotFound, wire.CodeNotFound, "")
	other := e.do(t, asTenant(request(t, "GET", "/jobs/"+id, ""), "tenant-b"))
	wantProblem(t, other, http.StatusNotFound, wire.CodeNotFound, "")
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
	wantProblem(t, resp, http.StatusInternalServerError, wire.CodeInternal, "")
}
