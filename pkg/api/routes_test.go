package api

import (
	"net/http"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

func TestWrongMethodIs405WithAllow(t *testing.T) {
	id := job.NewID("jwt:tenant-a", "k")
	tests := []struct{ method, path, allow string }{
		{"PUT", "/jobs", "GET, POST"},
		{"DELETE", "/jobs", "GET, POST"},
		{"HEAD", "/jobs", "GET, POST"},
		{"OPTIONS", "/jobs", "GET, POST"},
		{"post", "/jobs", "GET, POST"},
		{"POST", "/jobs/" + id, "GET"},
		{"HEAD", "/jobs/" + id, "GET"},
		{"DELETE", "/jobs/" + id, "GET"},
		{"PATCH", "/jobs/" + id, "GET"},
		{"GET", "/jobs/" + id + "/cancel", "POST"},
		{"HEAD", "/jobs/" + id + "/cancel", "POST"},
		{"PUT", "/jobs/" + id + "/cancel", "POST"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			e := newEnv(t)
			resp := e.do(t, request(t, tc.method, tc.path, simpleBody))
			wantProblem(t, resp, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "")
			if got := resp.Headers["Allow"]; got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
			if e.store.Len() != 0 || e.queue.count() != 0 {
				t.Errorf("records %d, sends %d", e.store.Len(), e.queue.count())
			}
		})
	}
}

func TestUnknownPathIs404(t *testing.T) {
	id := job.NewID("jwt:tenant-a", "k")
	for _, path := range []string{"", "/", "/job", "/jobs/", "/jobsx", "/JOBS", "/v1/jobs", "/jobs//cancel",
		"/jobs/" + id + "/", "/jobs/" + id + "/retry", "/jobs/" + id + "/cancel/now", "/prod/jobs"} {
		for _, method := range []string{"GET", "POST"} {
			t.Run(method+" "+path, func(t *testing.T) {
				e := newEnv(t)
				resp := e.do(t, request(t, method, path, simpleBody))
				wantProblem(t, resp, http.StatusNotFound, wire.CodeNotFound, "")
				if e.store.Len() != 0 || e.queue.count() != 0 {
					t.Errorf("records %d, sends %d", e.store.Len(), e.queue.count())
				}
			})
		}
	}
}

func TestNamedStagePrefixIsStripped(t *testing.T) {
	e := newEnv(t)
	ev := createReq(t, "k", simpleBody)
	ev.RawPath, ev.RequestContext.Stage = "/prod/jobs", "prod"
	resp := e.do(t, ev)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
	}
	id := decodeView(t, resp).ID
	get := request(t, "GET", "/prod/jobs/"+id, "")
	get.RequestContext.Stage = "prod"
	if resp := e.do(t, get); resp.StatusCode != http.StatusOK {
		t.Errorf("GET under the stage: %d %s", resp.StatusCode, resp.Body)
	}
}

func TestNoTenantIs401OnEveryRoute(t *testing.T) {
	id := job.NewID("jwt:tenant-a", "k")
	for _, r := range []struct{ method, path string }{{"POST", "/jobs"}, {"GET", "/jobs/" + id}, {"POST", "/jobs/" + id + "/cancel"}} {
		e := newEnv(t)
		ev := fixture(t, "request-no-authorizer.json")
		ev.RawPath, ev.RequestContext.HTTP.Method = r.path, r.method
		ev.Headers["idempotency-key"], ev.Body = "k", simpleBody
		wantProblem(t, e.do(t, ev), http.StatusUnauthorized, wire.CodeUnauthorized, "")
		if e.store.Len() != 0 || e.queue.count() != 0 {
			t.Errorf("%s %s: records %d, sends %d", r.method, r.path, e.store.Len(), e.queue.count())
		}
	}
}
