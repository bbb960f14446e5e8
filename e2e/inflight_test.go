package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// queueCounts reads the job queue's messages in flight
// (ApproximateNumberOfMessagesNotVisible) and delayed.
func (s *stack) queueCounts() (inFlight, delayed int) {
	s.t.Helper()
	out, err := s.sqs.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.app.Config.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	atoi := func(name sqstypes.QueueAttributeName) int {
		n, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil {
			s.t.Fatalf("queue attribute %s = %q: %v", name, out.Attributes[string(name)], err)
		}
		return n
	}
	return atoi(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible), atoi(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
}

// TestDeferralsLeaveInFlightFlat is issue L's "deferrals of an hour leave
// the in-flight count flat", scaled: AIJOBS_REQUEUE_AFTER 1 s, and a
// tenant held to one job in flight whose first job's call is held at the
// provider, so its other 16 jobs are deferred 5 to 10 s at a time (the
// tenant's wait, from a 10 s backoff base), each deferral past the bound.
// While they wait, and come back and are deferred again, the job queue's
// messages in flight stay at the held job's and at most one batch in a
// worker's hands (the dev server runs two invocations, one of them the
// held job's): never the 16 waiting, which is what hiding them counted.
// Once the call is let go every job succeeds with one attempt (a
// deferral is never an attempt).
func TestDeferralsLeaveInFlightFlat(t *testing.T) {
	t.Parallel()
	const waiting, batch = 16, 5
	gate := make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	k := newInFlightKey(t, 50*time.Millisecond, gate)
	t.Cleanup(release) // before the key's server closes: a failed test leaves no call held
	routes := fmt.Sprintf(`{"providers": {"key": {"kind": "openai", "base_url": %q}},
	  "routes": {"default": {"rungs": [{"provider": "key", "model": "gpt-e2e", "price": {"input": "15", "output": "60"}, "timeout": "60s"}]}}}`, k.srv.URL+"/v1")
	s := startStackWith(t, map[string]string{"AIJOBS_ROUTES": routes, "AIJOBS_TENANT_IN_FLIGHT": "1", "AIJOBS_REQUEUE_AFTER": "1s",
		"AIJOBS_BACKOFF_BASE": "10s", "AIJOBS_BACKOFF_MAX": "20s", "AIJOBS_MAX_CONCURRENCY": "2", "AIJOBS_BATCH_SIZE": strconv.Itoa(batch),
		"AIJOBS_LEASE_TTL": steadyLease["AIJOBS_LEASE_TTL"], "AIJOBS_HEARTBEAT": steadyLease["AIJOBS_HEARTBEAT"],
		"AIJOBS_WORKER_TIMEOUT": "70s", "AIJOBS_VISIBILITY_TIMEOUT": "71s"}, false)
	ids := []string{s.submit("busy", "held", jobBody("[[tenant:busy]] job 0", ""))}
	for deadline := time.Now().Add(30 * time.Second); k.inFlight("busy") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first job's call never reached the provider")
		}
	}
	rest := make([]string, waiting)
	var wg sync.WaitGroup
	for i := range waiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rest[i] = s.submit("busy", fmt.Sprint("wait-", i+1), jobBody(fmt.Sprintf("[[tenant:busy]] job %d", i+1), ""))
		}()
	}
	wg.Wait()
	ids = append(ids, rest...)
	// Every waiting job deferred once: its record queued, rate_limited,
	// with a not_before.
	deferred := func(id string, since time.Time) bool {
		j, err := s.app.Store.Get(context.Background(), id)
		return err == nil && j.State == job.Queued && j.ErrorClass == job.RateLimited && !j.NotBefore.IsZero() && j.UpdatedAt.After(since)
	}
	awaitProgress(t, 30*time.Second, 200*time.Millisecond, func() (int, bool) {
		n := 0
		for _, id := range rest {
			if deferred(id, time.Time{}) {
				n++
			}
		}
		return n, n == waiting
	}, func() string { return "the waiting jobs were not all deferred" })

	// A window longer than the longest wait (10 s): every job comes back
	// and is deferred again inside it.
	start := time.Now()
	most, sum, samples, delayedMost := 0, 0, 0, 0
	for time.Since(start) < 15*time.Second {
		n, d := s.queueCounts()
		most, sum, samples, delayedMost = max(most, n), sum+n, samples+1, max(delayedMost, d)
		time.Sleep(250 * time.Millisecond)
	}
	again := 0
	for _, id := range rest {
		if deferred(id, start) {
			again++
		}
	}
	t.Logf("in flight over %d samples in 15 s: at most %d, mean %.2f; delayed at most %d; %d of %d jobs deferred again in the window",
		samples, most, float64(sum)/float64(samples), delayedMost, again, waiting)
	if most > 1+batch {
		t.Errorf("%d messages in flight at most while %d jobs waited: want at most the held job's and one batch in hand (%d)", most, waiting, 1+batch)
	}
	if again < waiting/2 {
		t.Errorf("only %d of %d waiting jobs came back and were deferred again in the window: the measure saw too little", again, waiting)
	}
	release()
	for _, j := range awaitAll(t, s, ids, time.Minute) {
		if j.State != job.Succeeded || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d attempts (%s), want succeeded with one", j.ID, j.State, j.Attempts, j.ErrorDetail)
		}
	}
}
