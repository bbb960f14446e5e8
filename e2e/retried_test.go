package e2e

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestACreateIsRetriedAfterA5xxWithItsKey: the harness's create tries
// again, with the same Idempotency-Key, after the gateway's 500, and a
// repeat's 200 then counts as the job it asked for; a 4xx is answered at
// once, never retried.
func TestACreateIsRetriedAfterA5xxWithItsKey(t *testing.T) {
	var tries atomic.Int32
	keys := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		w.Header().Set("Content-Type", "application/json")
		switch tries.Add(1) {
		case 1:
			w.WriteHeader(http.StatusInternalServerError) // the dev gateway's own answer to an overrun
			_, _ = w.Write([]byte(`{"message":"Internal Server Error"}`))
		case 2:
			w.Header().Set("Idempotent-Replayed", "true")
			_, _ = w.Write([]byte(`{"id":"job_x"}`))
		default:
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"code":"conflict"}`))
		}
	}))
	defer srv.Close()
	s := &stack{t: t, url: srv.URL, client: srv.Client()}
	if id := s.submit("t", "k-1", jobBody("x", "")); id != "job_x" {
		t.Fatalf("id %q", id)
	}
	if a, b := <-keys, <-keys; a != "k-1" || b != "k-1" {
		t.Fatalf("keys %q then %q, want the same key twice", a, b)
	}
	if r, n := s.retried("POST", "/jobs/job_x/cancel", "t", nil, ""); r.status != http.StatusConflict || n != 1 {
		t.Fatalf("a 409 answered %d after %d tries, want at once", r.status, n)
	}
}

// TestALanesJobIsSplitByItsAttempts: the calls of a job retried after an
// unanswered attempt pass only when each attempt's calls start a plan
// and end in the lane the record gives it.
func TestALanesJobIsSplitByItsAttempts(t *testing.T) {
	plans := [][]job.Lane{{job.Flex, job.Standard}}
	two := []job.AttemptLane{{Attempt: 1, Lane: job.Flex}, {Attempt: 2, Lane: job.Standard}}
	for _, c := range []struct {
		calls    []job.Lane
		attempts []job.AttemptLane
		want     bool
	}{
		{[]job.Lane{job.Flex, job.Flex, job.Standard}, two, true},
		{[]job.Lane{job.Flex, job.Standard}, two, false},                                                 // one attempt's calls, two attempts recorded
		{[]job.Lane{job.Flex, job.Standard, job.Standard}, two, false},                                   // the second attempt skipped the cheaper lane
		{[]job.Lane{job.Flex, job.Flex}, []job.AttemptLane{two[0], {Attempt: 2, Lane: job.Flex}}, false}, // the last attempt no whole plan
		{[]job.Lane{job.Flex, job.Standard}, two[1:], true},
	} {
		if got := splitsByAttempt(c.calls, c.attempts, plans); got != c.want {
			t.Errorf("%v by %v: %v, want %v", c.calls, c.attempts, got, c.want)
		}
	}
}
