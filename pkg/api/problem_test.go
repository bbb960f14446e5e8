package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

func TestEveryCodeHasOneStatus(t *testing.T) {
	want := map[wire.Code]int{
		wire.CodeInvalidRequest: 400, wire.CodeUnauthorized: 401, wire.CodeNotFound: 404,
		wire.CodeMethodNotAllowed: 405, wire.CodeAlreadyFinished: 409, wire.CodePayloadTooLarge: 413,
		wire.CodeUnsupportedMediaType: 415, wire.CodeKeyReused: 422, wire.CodeEnqueueFailed: 503,
		wire.CodeUnavailable: 503, wire.CodeInternal: 500,
		"conflict": 500, "something_new": 500,
	}
	for code, status := range want {
		resp := problemFor(code, "f", "detail")
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d", code, resp.StatusCode, status)
		}
		p := decodeProblem(t, resp)
		if status == 500 && p.Code != wire.CodeInternal {
			t.Errorf("%s answered as %s", code, p.Code)
		}
		if status >= 500 && (p.Field != "" || p.Detail == "detail") {
			t.Errorf("%s: a server error shows a caller-supplied field or detail: %+v", code, p)
		}
	}
}

// TestDomainCodes: each domain code a caller can cause is answered by its
// own problem code; a conflict the handler did not resolve, or a code
// added later, is not a refusal but a server error.
func TestDomainCodes(t *testing.T) {
	want := map[job.Code]wire.Code{
		job.CodeInvalidRequest: wire.CodeInvalidRequest, job.CodeNotFound: wire.CodeNotFound,
		job.CodeTooLarge: wire.CodePayloadTooLarge, job.CodeUnavailable: wire.CodeUnavailable,
		job.CodeInternal: wire.CodeInternal, job.CodeConflict: "", "something_new": "",
	}
	for dc, code := range want {
		e, ok := refusal(fmt.Errorf("store: %w", &job.Error{Code: dc, Field: "f", Message: "m"}))
		switch {
		case code == "" && ok:
			t.Errorf("%s answered as %s, want a server error", dc, e.Code)
		case code != "" && (!ok || e.Code != code || e.Field != "f" || e.Message != "m"):
			t.Errorf("%s: %+v, %v; want %s with its field and message", dc, e, ok, code)
		}
	}
}

func TestStoreErrorsNeverReachTheCaller(t *testing.T) {
	id := job.NewID("jwt:tenant-a", "k")
	unavailable := &job.Error{Code: job.CodeUnavailable, Message: "dynamodb throttled us leak-me",
		Err: errors.New("ProvisionedThroughputExceededException leak-me")}
	plain := errors.New("operation error DynamoDB: GetItem, https response error leak-me")
	conflictWithoutRecord := &job.Error{Code: job.CodeConflict, Message: "leak-me"}
	tests := []struct {
		name   string
		err    error
		status int
		code   wire.Code
	}{
		{"unavailable", unavailable, http.StatusServiceUnavailable, wire.CodeUnavailable},
		{"wrapped unavailable", errors.Join(errors.New("leak-me"), unavailable), http.StatusServiceUnavailable, wire.CodeUnavailable},
		{"plain error", plain, http.StatusInternalServerError, wire.CodeInternal},
		{"conflict without a record", conflictWithoutRecord, http.StatusInternalServerError, wire.CodeInternal},
	}
	for _, tc := range tests {
		for _, r := range []struct{ method, path string }{{"POST", "/jobs"}, {"GET", "/jobs/" + id}, {"POST", "/jobs/" + id + "/cancel"}} {
			t.Run(tc.name+" "+r.method+" "+r.path, func(t *testing.T) {
				e := newEnv(t)
				e.h = e.handler(failingStore(tc.err))
				ev := createReq(t, "k", simpleBody)
				ev.RawPath, ev.RequestContext.HTTP.Method = r.path, r.method
				resp := e.do(t, ev)
				wantProblem(t, resp, tc.status, tc.code, "")
				if strings.Contains(resp.Body, "leak-me") || strings.Contains(resp.Body, "DynamoDB") {
					t.Errorf("body leaks the error: %s", resp.Body)
				}
				if ra := resp.Headers["Retry-After"]; (tc.status == 503) != (ra == "2") {
					t.Errorf("Retry-After = %q", ra)
				}
				if e.queue.count() != 0 {
					t.Errorf("%d sends after a failed write", e.queue.count())
				}
				if !strings.Contains(e.logs.String(), "leak-me") {
					t.Errorf("the error is not logged:\n%s", e.logs.String())
				}
			})
		}
	}
}

func TestPanicIsInternal(t *testing.T) {
	id := job.NewID("jwt:tenant-a", "k")
	for _, r := range []struct{ method, path string }{{"POST", "/jobs"}, {"GET", "/jobs/" + id}, {"POST", "/jobs/" + id + "/cancel"}} {
		e := newEnv(t)
		e.h = e.handler(&stubStore{}) // every call panics
		ev := createReq(t, "k", simpleBody)
		ev.RawPath, ev.RequestContext.HTTP.Method = r.path, r.method
		resp := e.do(t, ev)
		wantProblem(t, resp, http.StatusInternalServerError, wire.CodeInternal, "")
		if !strings.Contains(e.logs.String(), "panic") {
			t.Errorf("the panic is not logged:\n%s", e.logs.String())
		}
	}
}

func TestZeroConfigDoesNotPanic(t *testing.T) {
	ev := request(t, "GET", "/jobs/"+job.NewID("t", "k"), "")
	resp, err := New(Config{Logger: newEnv(t).h.log}).Handle(t.Context(), ev)
	checkContract(t, ev, resp)
	if err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, err %v", resp.StatusCode, err)
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "1", 1: "1", time.Second: "1", time.Second + 1: "2", 2 * time.Second: "2", 90 * time.Second: "90"} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%s) = %s, want %s", d, got, want)
		}
	}
}
