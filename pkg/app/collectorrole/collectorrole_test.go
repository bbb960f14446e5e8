package collectorrole_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aijobs/aijobs/pkg/app/collectorrole"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

// batchRoutes offer a batch lane on "batchy" (a fake with a key, so the
// collector has one to read) on the default route, and a second route on
// "other", whose key only the worker needs.
const batchRoutes = `{"providers":{
	"batchy":{"kind":"fake","api_key_secret":"aijobs/batchy"},
	"other":{"kind":"anthropic","api_key_secret":"aijobs/other"}},
  "routes":{
	"default":{"rungs":[{"provider":"batchy","price":{"input":1,"output":2},"lanes":{"batch":{"price":{"input":1,"output":1},"p99":"1h"}}}]},
	"direct":{"rungs":[{"provider":"other","model":"claude-haiku-4-5","price":{"input":1,"output":2}}]}}}`

// awsStub stands in for AWS at AWS_ENDPOINT_URL: it records each call as
// "<target> <table, index or secret>" and answers Secrets Manager with a
// key, and DynamoDB as answer says (an empty table when nil).
type awsStub struct {
	mu     sync.Mutex
	calls  []string
	answer func(target string) (int, string)
}

func (s *awsStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ TableName, IndexName, SecretId string }
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &in)
	target := r.Header.Get("X-Amz-Target")
	on := strings.TrimSpace(in.TableName + " " + in.IndexName + in.SecretId)
	s.mu.Lock()
	s.calls = append(s.calls, target+" "+on)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	status, body := http.StatusOK, "{}"
	switch {
	case strings.HasPrefix(target, "secretsmanager."):
		body = `{"Name":"` + in.SecretId + `","SecretString":"key-of-` + in.SecretId + `"}`
	case s.answer != nil:
		status, body = s.answer(target)
	case strings.HasSuffix(target, ".Query"):
		body = `{"Items":[],"Count":0}`
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func (s *awsStub) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// wireCollector wires the collector function as Lambda's Init does, from
// its environment with routes, its AWS the stub.
func wireCollector(t *testing.T, stub *awsStub, routes string) (any, error) {
	t.Helper()
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	env := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": srv.URL, "AIJOBS_ROUTES": routes,
		"AIJOBS_QUEUE_URL": srv.URL + "/123456789012/aijobs-jobs",
	}
	b, err := roles.FromEnv(t.Context(), getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	return collectorrole.Handler(t.Context(), b)
}

// The collector function builds only the providers its batch lanes call,
// so it reads their keys and no other (its role may read no other), and
// each invocation is one collector run: it reads the open batch records
// (the buckets table) and the jobs waiting in each batch lane (the
// enlisted index), and nothing more when none waits.
func TestCollectorHandlerRunsOverItsLanesProviders(t *testing.T) {
	stub := &awsStub{}
	h, err := wireCollector(t, stub, batchRoutes)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stub.seen(), []string{"secretsmanager.GetSecretValue aijobs/batchy"}; !slices.Equal(got, want) {
		t.Errorf("wiring the collector called %v, want %v (never the other provider's key)", got, want)
	}
	run, ok := h.(func(context.Context) error)
	if !ok {
		t.Fatalf("handler %T, want func(context.Context) error", h)
	}
	if err := run(t.Context()); err != nil {
		t.Fatalf("a run with nothing to collect: %v", err)
	}
	want := []string{"secretsmanager.GetSecretValue aijobs/batchy", "DynamoDB_20120810.GetItem aijobs-buckets",
		"DynamoDB_20120810.Query aijobs-jobs enlisted"}
	if got := stub.seen(); !slices.Equal(got, want) {
		t.Errorf("one run called %v, want %v", got, want)
	}
}

// A run that fails is the invocation's error (Lambda counts it in the
// function's Errors, which the CollectorErrors alarm watches).
func TestCollectorHandlerFailsAFailedRun(t *testing.T) {
	stub := &awsStub{answer: func(string) (int, string) {
		return http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no such table"}`
	}}
	h, err := wireCollector(t, stub, batchRoutes)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.(func(context.Context) error)(t.Context()); err == nil {
		t.Error("a run whose batch records cannot be read succeeded")
	}
}

// Without a batch lane the collector has nothing to do: its function
// fails at init (the stack deploys none then).
func TestCollectorHandlerRefusesRoutesWithoutABatchLane(t *testing.T) {
	stub := &awsStub{}
	if _, err := wireCollector(t, stub, ""); err == nil || !strings.Contains(err.Error(), "batch lane") {
		t.Errorf("a collector without a batch lane: %v, want an error naming the batch lane", err)
	}
	if calls := stub.seen(); len(calls) != 0 {
		t.Errorf("calls %v while wiring", calls)
	}
}
