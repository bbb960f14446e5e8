package roles_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// throttledSide stands in for DynamoDB: every call on the buckets table
// is throttled, and the jobs table throttles its first call only, as a
// hot partition does for a moment.
type throttledSide struct {
	buckets string
	mu      sync.Mutex
	jobs    int // calls on the jobs table
}

func (s *throttledSide) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ TableName string }
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &in)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	s.mu.Lock()
	first := false
	if in.TableName != s.buckets {
		s.jobs++
		first = s.jobs == 1
	}
	s.mu.Unlock()
	if in.TableName == s.buckets || first {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"throttled"}`)
		return
	}
	_, _ = io.WriteString(w, `{}`)
}

// jobCalls answers the calls on the jobs table so far, and counts anew.
func (s *throttledSide) jobCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.jobs
	s.jobs = 0
	return n
}

// The side tables' throttles spend the side client's retry quota, not the
// job store's: once the slots' calls have exhausted theirs (the SDK
// answers "retry quota exceeded" without retrying), a job read that is
// throttled once is still retried, and answers. The same read through
// the side client is refused at once, which is what sharing one client
// did to the job store.
func TestSideTablesSpendTheirOwnRetryQuota(t *testing.T) {
	side := &throttledSide{}
	srv := httptest.NewServer(side)
	t.Cleanup(srv.Close)
	env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": srv.URL,
		"AIJOBS_QUEUE_URL": srv.URL + "/123456789012/aijobs-jobs", "AIJOBS_AWS_CALL_TIMEOUT": "60s"}
	b, err := roles.FromEnv(t.Context(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	side.buckets = b.Config.BucketsTable
	if b.Side == b.DynamoDB || b.Side.Options().Retryer == b.DynamoDB.Options().Retryer {
		t.Fatal("the side tables share the job store's client or retryer")
	}
	slots := dynamodb.NewSlots(b.Side, b.Config.BucketsTable)
	exhausted := false
	for round := 0; round < 5 && !exhausted; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 40 {
			wg.Go(func() {
				_, err := slots.Enter(t.Context(), job.Slot{Tenant: "t1", JobID: "j", Now: time.Now(), Until: time.Now().Add(time.Minute), Limit: 2})
				if err != nil && strings.Contains(err.Error(), "retry quota exceeded") {
					mu.Lock()
					exhausted = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if !exhausted {
		t.Fatal("the throttled slots never exhausted the side client's retry quota")
	}
	if _, err := b.Store.Get(t.Context(), "j_t1_0"); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("a job read throttled once after the side quota ran out: %v, want it retried and answered (not found)", err)
	}
	if n := side.jobCalls(); n != 2 {
		t.Fatalf("%d calls on the jobs table, want 2 (a throttle, then its retry)", n)
	}
	shared := dynamodb.New(b.Side, b.Config.Table, b.Config.Settings)
	if _, err := shared.Get(t.Context(), "j_t1_0"); err == nil || !strings.Contains(err.Error(), "retry quota exceeded") {
		t.Fatalf("a job read on the side client: %v, want the exhausted quota (the test shows nothing otherwise)", err)
	}
}
