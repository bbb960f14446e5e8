package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestJobSucceedsAndReplaysIdempotently(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	body := `{"input":{"messages":[{"role":"user","content":"hello e2e"}],"max_tokens":50},"metadata":{"a":1,"b":2}}`
	r, _ := s.retried("POST", "/jobs", "tenant-a", map[string]string{"Idempotency-Key": "k-1"}, body)
	if r.status != http.StatusAccepted || r.header.Get("Location") != "/jobs/"+r.body["id"].(string) {
		t.Fatalf("create: %d %v %s", r.status, r.header, r.raw)
	}
	id := r.body["id"].(string)
	v := s.wait("tenant-a", id, 10*time.Second, "succeeded")
	if num(v, "attempts") != "1" || v["error_class"] != nil || v["result"] == nil {
		t.Fatalf("view: %v", v)
	}
	if got, want := num(v, "cost_cents"), s.fake.Billed(id).String(); got != want {
		t.Fatalf("cost_cents = %s, the model billed %s", got, want)
	}

	// Same key, same input (keys reordered, other whitespace): the same job.
	repeat := `{ "metadata": {"b":2, "a":1}, "input": {"max_tokens":50, "messages":[{"content":"hello e2e","role":"user"}]} }`
	r, _ = s.retried("POST", "/jobs", "tenant-a", map[string]string{"Idempotency-Key": "k-1"}, repeat)
	if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "true" || r.body["id"] != id || r.body["state"] != "succeeded" {
		t.Fatalf("repeat: %d %v %s", r.status, r.header, r.raw)
	}
	// Same key, any field changed: 422, and still one generation.
	r, _ = s.retried("POST", "/jobs", "tenant-a", map[string]string{"Idempotency-Key": "k-1"}, strings.Replace(body, `"b":2`, `"b":3`, 1))
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "idempotency_key_reused" {
		t.Fatalf("reused key: %d %s", r.status, r.raw)
	}
	// Another tenant with the same key is another job; it cannot see tenant-a's.
	other := s.submit("tenant-b", "k-1", body)
	if other == id {
		t.Fatal("two tenants share a job id")
	}
	miss := s.get("tenant-b", id)
	unknown := s.get("tenant-b", "job_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	if miss.status != http.StatusNotFound || string(miss.raw) != string(unknown.raw) {
		t.Fatalf("other tenant's job: %d %s, unknown: %s", miss.status, miss.raw, unknown.raw)
	}
	s.wait("tenant-b", other, 10*time.Second, "succeeded")
	time.Sleep(300 * time.Millisecond)
	if g := s.fake.Generations(id); g != 1 {
		t.Fatalf("generations = %d, want 1", g)
	}
}

func TestRetriesAreCountedAndPaidFor(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	id := s.submit("t", "retry", jobBody("[[fake:fail=rate_limited*2]] try again", ""))
	v := s.wait("t", id, 15*time.Second, "succeeded")
	if num(v, "attempts") != "3" || v["error_class"] != nil {
		t.Fatalf("view: %v", v)
	}
	if s.fake.Calls(id) != 3 || s.fake.Generations(id) != 1 {
		t.Fatalf("calls %d generations %d, want 3 and 1", s.fake.Calls(id), s.fake.Generations(id))
	}
	if got, want := num(v, "cost_cents"), s.fake.Billed(id).String(); got != want || want == "0" {
		t.Fatalf("cost over three attempts = %s, billed %s", got, want)
	}
}

func TestPermanentErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	id := s.submit("t", "perm", jobBody("[[fake:fail=content_filtered]] nope", ""))
	v := s.wait("t", id, 10*time.Second, "failed")
	if v["error_class"] != "content_filtered" || num(v, "attempts") != "1" || s.fake.Calls(id) != 1 {
		t.Fatalf("view: %v, calls %d", v, s.fake.Calls(id))
	}
}

// TestAnInputThatFailedDeterministicallyIsQuarantined: a job whose input
// the provider refuses (content_filtered) ends failed after one call; the
// same input from the same tenant under a new key is then refused at
// create with 422 input_quarantined naming that job, with no job recorded
// and no call made, while the first key's repeat is still its job and
// another tenant's same input is accepted.
func TestAnInputThatFailedDeterministicallyIsQuarantined(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	body := jobBody("[[fake:fail=content_filtered]] the same bad input", "")
	first := s.submit("t", "q-1", body)
	s.wait("t", first, 10*time.Second, "failed")
	var r response
	for i, deadline := 0, time.Now().Add(5*time.Second); ; i++ {
		// The worker writes the quarantine just after the job's end, which
		// a poll may see first: a create in between is accepted (and
		// fails as the first did), so try again under a fresh key.
		key := "q-2-" + strconv.Itoa(i)
		if r, _ = s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": key}, body); r.status != http.StatusAccepted || time.Now().After(deadline) {
			break
		}
		s.wait("t", r.body["id"].(string), 10*time.Second, "failed")
	}
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "input_quarantined" || !strings.Contains(fmt.Sprint(r.body["detail"]), first) {
		t.Fatalf("the same input again: %d %s", r.status, r.raw)
	}
	if again, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "q-1"}, body); again.status != http.StatusOK || again.body["id"] != first {
		t.Fatalf("the first key's repeat: %d %s", again.status, again.raw)
	}
	if other := s.submit("t-other", "q-1", body); other == first {
		t.Fatalf("another tenant's job has the first one's id")
	}
	if n := s.fake.Calls(first); n != 1 {
		t.Fatalf("the first job was called %d times", n)
	}
}

func TestRetriesStopAtMaxAttempts(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	id := s.submit("t", "overloaded", jobBody("[[fake:fail=overloaded]] busy", `"max_attempts":2`))
	v := s.wait("t", id, 15*time.Second, "failed")
	if v["error_class"] != "overloaded" || num(v, "attempts") != "2" || s.fake.Calls(id) != 2 {
		t.Fatalf("view: %v, calls %d", v, s.fake.Calls(id))
	}
	if got, want := num(v, "cost_cents"), s.fake.Billed(id).String(); got != want {
		t.Fatalf("cost %s, billed %s", got, want)
	}
}

func TestCancelReachesRunningCall(t *testing.T) {
	t.Parallel()
	// With the harness's 1 s lease, a loaded machine let the first
	// attempt's lease lapse, and the cancel met a second attempt; with its
	// 100 ms heartbeats, the cancel's three re-stamps lost (a 503).
	s := startStack(t, steadyLease)
	id := s.submit("t", "cancel", jobBody("[[fake:hang]] forever", ""))
	s.wait("t", id, 10*time.Second, "running")
	for started := time.Now(); s.fake.Running(id) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(started) > 10*time.Second { // the state is written before the call starts
			t.Fatal("the job is running but its call never started")
		}
	}
	r := s.cancel("t", id)
	if r.status != http.StatusOK || r.body["state"] != "abandoned" || r.body["error_class"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	cancelledAt := time.Now()
	// The call ends at the next heartbeat (500 ms)...
	for s.fake.Running(id) != 0 {
		if took := time.Since(cancelledAt); took > 2*time.Second {
			t.Fatalf("the running call was not stopped in %s", took)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// ...and every call's cost lands on the record.
	for {
		v := s.get("t", id).body
		billed := s.fake.Billed(id)
		if billed != 0 && num(v, "cost_cents") == billed.String() {
			break
		}
		if time.Since(cancelledAt) > 5*time.Second {
			t.Fatalf("discarded attempt's cost %s, billed %s", num(v, "cost_cents"), billed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.fake.Generations(id) != 0 {
		t.Fatal("a cancelled job completed a generation")
	}
	if again := s.cancel("t", id); again.status != http.StatusOK {
		t.Fatalf("second cancel: %d", again.status)
	}
}

func TestDeadlineAndBudgetAbandon(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	late := s.submit("t", "deadline", jobBody("[[fake:hang]] slow", `"deadline_seconds":1`))
	// A budget below one attempt's worst case is refused at the door.
	r, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "budget"}, jobBody("cheap please", `"budget_cents":0.000001`))
	if r.status != http.StatusBadRequest || r.body["code"] != "invalid_request" || r.body["field"] != "budget_cents" {
		t.Fatalf("budget below one attempt: %d %s", r.status, r.raw)
	}
	// A budget of exactly one attempt's worst case: the first attempt runs,
	// fails retryably, and what is left no longer covers a second.
	var in job.Input
	_ = json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"[[fake:fail=provider_error]] once"}],"max_tokens":50}`), &in)
	poor := s.submit("t", "budget-2", jobBody("[[fake:fail=provider_error]] once", `"budget_cents":`+s.app.Config.Routes["default"].Reserve(in, nil).String()))
	v := s.wait("t", late, 10*time.Second, "abandoned")
	if v["error_class"] != "deadline_exceeded" {
		t.Fatalf("deadline: %v", v)
	}
	if got, want := num(v, "cost_cents"), s.fake.Billed(late).String(); got != want {
		t.Fatalf("deadline cost %s, billed %s", got, want)
	}
	v = s.wait("t", poor, 10*time.Second, "abandoned")
	if v["error_class"] != "budget_exhausted" || s.fake.Calls(poor) != 1 || num(v, "attempts") != "1" || num(v, "reserved_cents") != "0" {
		t.Fatalf("budget: %v, calls %d (one attempt, and none that could overrun)", v, s.fake.Calls(poor))
	}
	if got, want := num(v, "cost_cents"), s.fake.Billed(poor).String(); got != want {
		t.Fatalf("budget cost %s, billed %s", got, want)
	}
}

func TestDuplicateMessagesNeverGenerateTwice(t *testing.T) {
	t.Parallel()
	// A lease of seconds, not the harness's one: with 1 s, a kumo call
	// slow on a loaded machine let the lease guard stop the first call
	// before it generated, and a second attempt ran (one generation, as
	// promised, but two calls and two attempts, not the duplicates'
	// doing). Here only the duplicates may cost anything.
	s := startStack(t, steadyLease)
	id := s.submit("t", "dups", jobBody("[[fake:latency=1500ms]] take your time", ""))
	s.wait("t", id, 10*time.Second, "running")
	for range 3 {
		s.sendRaw(`{"job_id":"` + id + `"}`)
	}
	s.wait("t", id, 10*time.Second, "succeeded")
	for range 3 {
		s.sendRaw(`{"job_id":"` + id + `"}`)
	}
	// A duplicate delivered while the job ran is hidden until the lease it
	// found would end (steadyLease's 20 s), then deleted at its claim.
	s.drained(time.Minute)
	v := s.get("t", id).body
	if s.fake.Generations(id) != 1 || s.fake.Calls(id) != 1 || num(v, "attempts") != "1" {
		t.Fatalf("generations %d calls %d attempts %v: duplicates must cost a DB round trip, not a generation",
			s.fake.Generations(id), s.fake.Calls(id), v["attempts"])
	}
}

func TestLeaseExpiredWhileFirstWorkerStillRuns(t *testing.T) {
	t.Parallel()
	// Heartbeats every 2 s, so the forced expiry below is usually not
	// renewed before the second worker takes over. A 15 s call leaves room
	// to try again when a loaded machine let the heartbeat win, and for
	// the first owner's next heartbeat to stop it before it would finish
	// (with 6 s, tries and a slow heartbeat on a loaded machine outlasted
	// the call once).
	s := startStack(t, map[string]string{"AIJOBS_HEARTBEAT": "2s", "AIJOBS_LEASE_TTL": "6s", "AIJOBS_LEASE_MARGIN": "1s",
		"AIJOBS_MODEL_TIMEOUT": "20s", "AIJOBS_WORKER_TIMEOUT": "25s", "AIJOBS_VISIBILITY_TIMEOUT": "30s"})
	id := s.submit("t", "lease", jobBody("[[fake:latency=15s]] long call", ""))
	s.wait("t", id, 10*time.Second, "running")
	for try := 1; !s.takenOver(id); try++ {
		if try == 5 {
			t.Fatal("no second worker took the expired lease over in five tries")
		}
	}
	v := s.wait("t", id, 45*time.Second, "succeeded")
	// Two attempts, unless a loaded machine let the second's lease lapse
	// too (one more attempt, as the lease is meant to): every attempt made
	// one call, and only one call generated.
	if attempts, _ := strconv.Atoi(num(v, "attempts")); attempts < 2 || attempts != s.fake.Calls(id) || s.fake.Generations(id) != 1 {
		t.Fatalf("attempts %v calls %d generations %d: the stale owner must be stopped, not finish",
			v["attempts"], s.fake.Calls(id), s.fake.Generations(id))
	}
	// The stale owner's discarded attempt is paid for too; its cost lands
	// when it notices (its next heartbeat).
	deadline := time.Now().Add(5 * time.Second)
	for num(s.get("t", id).body, "cost_cents") != s.fake.Billed(id).String() {
		if time.Now().After(deadline) {
			t.Fatalf("cost %s, billed %s", num(s.get("t", id).body, "cost_cents"), s.fake.Billed(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestPoisonMessagesAreDeadLetteredNotLooped(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	done := s.submit("t", "done", jobBody("finish me", ""))
	s.wait("t", done, 10*time.Second, "succeeded")
	s.sendRaw("this is not json")
	s.sendRaw(`{"job_id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`)
	s.sendRaw(`{"job_id":"` + done + `"}`)
	s.drained(15 * time.Second)
	reasons := s.deadLetterReasons(2, 10*time.Second)
	if len(reasons) != 2 || !contains(reasons, "unparseable") || !contains(reasons, "job_not_found") {
		t.Fatalf("dead letter reasons = %v", reasons)
	}
	if s.fake.Calls(done) != 1 {
		t.Fatalf("finished job called %d times", s.fake.Calls(done))
	}
}

func TestBadInputLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	key := map[string]string{"Idempotency-Key": "bad"}
	cases := []struct {
		name, method, path, tenant string
		headers                    map[string]string
		body                       string
		status                     int
		code                       string
	}{
		{"no key", "POST", "/jobs", "t", nil, jobBody("x", ""), 400, "invalid_request"},
		{"oversized key", "POST", "/jobs", "t", map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, jobBody("x", ""), 400, "invalid_request"},
		{"malformed json", "POST", "/jobs", "t", key, `{"input":`, 400, "invalid_request"},
		{"array", "POST", "/jobs", "t", key, `[1,2]`, 400, "invalid_request"},
		{"missing input", "POST", "/jobs", "t", key, `{"model":"default"}`, 400, "invalid_request"},
		{"unknown field", "POST", "/jobs", "t", key, `{"input":{"messages":[{"role":"user","content":"x"}]},"colour":"red"}`, 400, "invalid_request"},
		{"out of range", "POST", "/jobs", "t", key, jobBody("x", `"max_attempts":1000`), 400, "invalid_request"},
		{"5.1 MiB body", "POST", "/jobs", "t", key, `{"input":"` + strings.Repeat("a", 5<<20+100<<10) + `"}`, 413, "payload_too_large"}, // over the API's 5 MiB, under the gateway's 6 MB
		{"garbage id", "GET", "/jobs/%00%ff..", "t", nil, "", 400, "invalid_request"},
		{"oversized id", "GET", "/jobs/job_" + strings.Repeat("a", 300), "t", nil, "", 400, "invalid_request"},
		{"wrong method", "DELETE", "/jobs", "t", nil, "", 405, "method_not_allowed"},
		{"wrong method on job", "PUT", "/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "t", nil, "", 405, "method_not_allowed"},
		{"unknown path", "GET", "/nope", "t", nil, "", 404, "not_found"},
		{"unknown job", "GET", "/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "t", nil, "", 404, "not_found"},
		{"cancel unknown", "POST", "/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel", "t", nil, "", 404, "not_found"},
	}
	for _, c := range cases {
		r, _ := s.retried(c.method, c.path, c.tenant, c.headers, c.body)
		if r.status != c.status || r.body["code"] != c.code || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: %d %s %q, want %d %s", c.name, r.status, r.header.Get("Content-Type"), r.raw, c.status, c.code)
		}
	}
	// No token: the route's authorizer answers itself, as API Gateway does;
	// the function never runs.
	if r, _ := s.retried("POST", "/jobs", "", key, jobBody("x", "")); r.status != 401 || r.body["message"] != "Unauthorized" {
		t.Errorf("no tenant: %d %q, want API Gateway's 401", r.status, r.raw)
	}
	out, err := s.ddb.Scan(context.Background(), &awsddb.ScanInput{TableName: aws.String(s.app.Config.Table), Select: ddbtypes.SelectCount})
	if err != nil || out.Count != 0 {
		t.Fatalf("bad input left %d records behind (%v)", out.Count, err)
	}
	if n := s.queueDepth(); n != 0 {
		t.Fatalf("bad input left %d messages behind", n)
	}
}

// drained waits until the job queue holds no message, visible or not.
func (s *stack) drained(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for s.queueDepth() != 0 {
		if time.Now().After(deadline) {
			s.t.Fatalf("queue still holds %d messages after %s", s.queueDepth(), timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *stack) queueDepth() int {
	s.t.Helper()
	out, err := s.sqs.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.app.Config.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, err := strconv.Atoi(v)
		if err != nil {
			s.t.Fatalf("queue attribute %q: %v", v, err)
		}
		n += k
	}
	return n
}

func (s *stack) deadLetterReasons(want int, timeout time.Duration) []string {
	s.t.Helper()
	var reasons []string
	deadline := time.Now().Add(timeout)
	for len(reasons) < want && time.Now().Before(deadline) {
		out, err := s.sqs.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.app.Config.DLQURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, VisibilityTimeout: 30,
		})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, m := range out.Messages {
			reasons = append(reasons, aws.ToString(m.MessageAttributes["aijobs_reason"].StringValue))
		}
	}
	return reasons
}

// takenOver expires the running job's lease and delivers its message
// again, and says whether a second attempt claimed it. It waits while the
// lease stays expired (a loaded machine may take seconds to claim), and
// says no once the first owner's heartbeat has renewed it.
func (s *stack) takenOver(id string) bool {
	s.t.Helper()
	if !s.expireLease(id) {
		// Not running at this moment: between the write-off of a dead
		// attempt and the next claim, the record is briefly queued.
		time.Sleep(200 * time.Millisecond)
		return s.attemptsOf(id) > 1
	}
	s.sendRaw(`{"job_id":"` + id + `"}`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, err := s.ddb.GetItem(context.Background(), &awsddb.GetItemInput{TableName: aws.String(s.app.Config.Table),
			Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			continue // a slow emulator; the next read may answer
		}
		attempts, _ := out.Item["attempts"].(*ddbtypes.AttributeValueMemberN)
		lease, _ := out.Item["lease_until_ms"].(*ddbtypes.AttributeValueMemberN)
		switch {
		case attempts != nil && attempts.Value != "1":
			return true
		case lease == nil || lease.Value != "1":
			return false // renewed by the first owner, or ended
		}
	}
	return false
}

// attemptsOf is the record's attempts, read consistently; 0 when the read
// fails (a slow emulator; the caller tries again).
func (s *stack) attemptsOf(id string) int {
	out, err := s.ddb.GetItem(context.Background(), &awsddb.GetItemInput{TableName: aws.String(s.app.Config.Table),
		Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0
	}
	n, _ := out.Item["attempts"].(*ddbtypes.AttributeValueMemberN)
	if n == nil {
		return 0
	}
	a, _ := strconv.Atoi(n.Value)
	return a
}

// expireLease moves a running job's lease into the past, as if its worker
// had stalled past it, without touching the owner. It answers false when
// the job is not running at that moment (the condition refused).
func (s *stack) expireLease(id string) bool {
	s.t.Helper()
	_, err := s.ddb.UpdateItem(context.Background(), &awsddb.UpdateItemInput{
		TableName:                 aws.String(s.app.Config.Table),
		Key:                       map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET lease_until_ms = :past"),
		ConditionExpression:       aws.String("#s = :running"),
		ExpressionAttributeNames:  map[string]string{"#s": "state"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":past": &ddbtypes.AttributeValueMemberN{Value: "1"}, ":running": &ddbtypes.AttributeValueMemberS{Value: "running"}},
	})
	var refused *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &refused) {
		return false
	}
	if err != nil {
		s.t.Fatalf("expire lease: %v", err)
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
