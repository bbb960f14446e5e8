// Package e2e drives the local dev server over HTTP against the kumo
// emulator: the real API and worker handlers, the real DynamoDB and SQS
// adapters, the event source mapping emulator, and a fake model that counts
// generations per job, so "never a second billed generation" is measured,
// not assumed.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/aijobs/aijobs/internal/apispec"
	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

func TestMain(m *testing.M) {
	// Bedrock rungs sign with the default credential chain (real AWS even
	// when the table is kumo's): give the tests' local Bedrock fakes
	// something to sign with, and never probe EC2 metadata.
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "e2e", "AWS_SECRET_ACCESS_KEY": "e2e", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			_ = os.Setenv(k, v)
		}
	}
	os.Exit(awstest.Main(m))
}

// testEnv are the timings end-to-end tests run with: the production rules,
// scaled down so a lease expires in about a second.
func testEnv(prefix, endpoint string) map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL":          endpoint,
		"AWS_REGION":                "us-east-1",
		"AIJOBS_PREFIX":             prefix,
		"AIJOBS_LISTEN":             "127.0.0.1:0",
		"AIJOBS_LOG_LEVEL":          "warn",
		"AIJOBS_METRICS":            "off",
		"AIJOBS_MODEL_PROVIDER":     "fake",
		"AIJOBS_FAKE_LATENCY":       "50ms",
		"AIJOBS_PRICE_INPUT":        "100",
		"AIJOBS_PRICE_OUTPUT":       "400",
		"AIJOBS_MODEL_TIMEOUT":      "3s",
		"AIJOBS_ATTEMPT_MARGIN":     "1s",
		"AIJOBS_LAMBDA_MARGIN":      "1s",
		"AIJOBS_HEARTBEAT":          "100ms",
		"AIJOBS_LEASE_TTL":          "1s",
		"AIJOBS_BACKOFF_BASE":       "200ms",
		"AIJOBS_BACKOFF_MAX":        "1s",
		"AIJOBS_WORKER_TIMEOUT":     "6s",
		"AIJOBS_VISIBILITY_TIMEOUT": "7s",
		"AIJOBS_BATCH_SIZE":         "5",
		"AIJOBS_BATCH_WINDOW":       "0s",
		"AIJOBS_MAX_CONCURRENCY":    "4",
		// kumo on a loaded CI machine can take seconds to answer; the
		// deadline still ends a stalled call, just later.
		"AIJOBS_AWS_CALL_TIMEOUT": "15s",
		// Callbacks are off unless a test turns them on (callbackEnv):
		// the notifier's two pollers are load a timing test need not carry.
		"AIJOBS_CALLBACKS": "false",
		// When on, they go to receivers in the test, on loopback, and retry
		// on a schedule of seconds.
		"AIJOBS_CALLBACK_ALLOW_LOOPBACK": "true",
		"AIJOBS_CALLBACK_TIMEOUT":        "1s",
		"AIJOBS_CALLBACK_RETRY_BASE":     "200ms",
		"AIJOBS_CALLBACK_RETRY_MAX":      "1s",
		"AIJOBS_NOTIFIER_TIMEOUT":        "6s",
	}
}

// steadyLease is the lease a test runs with when it counts attempts,
// calls or cost exactly and is not about a lease running out: with the
// harness's 1 s, a kumo call slow on a loaded machine (make test runs
// every package at once, under -race) lets a lease lapse, and the next
// attempt is the lease doing its job, not the behaviour under test.
// Heartbeats every 500 ms: each one stamps the record, and ten a second
// can outrun a cancel's re-stamps on a loaded machine. 20 s, not 5 s:
// beside a second make test, kumo stalled for over 10 s at a time (API
// handlers overran their 10 s timeout), and 5 s leases lapsed. The
// attempt's cap (its route's timeout) still bounds the lease.
var steadyLease = map[string]string{"AIJOBS_LEASE_TTL": "20s", "AIJOBS_HEARTBEAT": "500ms"}

// stack is one dev server with its own table and queues.
type stack struct {
	t    *testing.T
	url  string
	app  *app.App
	fake *fake.Provider
	// called is when the fake's first call for each job came.
	called *firstCalls
	// calls counts every AWS call the stack's handlers make.
	calls  *awsclient.Counter
	ddb    *awsddb.Client
	sqs    *awssqs.Client
	client *http.Client
}

func startStack(t *testing.T, overrides map[string]string) *stack {
	t.Helper()
	return startStackWith(t, overrides, true)
}

// startStackWith starts a stack; with fakeModel every provider is the
// counting fake, else the configured providers (AIJOBS_ROUTES) run.
func startStackWith(t *testing.T, overrides map[string]string, fakeModel bool) *stack {
	t.Helper()
	env := testEnv(awstest.Prefix(t), awstest.Endpoint(t))
	for k, v := range overrides {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	f := fake.New(fake.Config{Latency: cfg.Shortcut.FakeLatency, Price: cfg.Shortcut.Price})
	called := &firstCalls{Provider: f, at: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	calls := awsclient.NewCounter()
	opts := app.Options{CreateResources: true, Counter: calls}
	if fakeModel {
		opts.EveryProvider = called
	}
	a, err := app.New(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.DevServer().Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev server: %v", err)
		}
	})
	awsCfg := awstest.Config(t, nil)
	return &stack{t: t, url: "http://" + ln.Addr().String(), app: a, fake: f, called: called, calls: calls,
		ddb: awsclient.DynamoDB(awsCfg), sqs: awsclient.SQS(awsCfg), client: apiClient(t)}
}

// firstCalls is the counting fake, noting when each job's first call
// came: the latest moment its worker can have planned the call, so a test
// can hold a choice to the time the job had left then, not to the time
// an idle machine would have left it.
type firstCalls struct {
	*fake.Provider // its batch lane, and its counts, unchanged
	mu             sync.Mutex
	at             map[string]time.Time
}

func (p *firstCalls) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	p.mu.Lock()
	if _, ok := p.at[r.JobID]; !ok {
		p.at[r.JobID] = time.Now()
	}
	p.mu.Unlock()
	return p.Provider.Generate(ctx, r)
}

// of is when the job's first call came, and false before any (a job
// that ran in the batch lane has none).
func (p *firstCalls) of(jobID string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.at[jobID]
	return at, ok
}

// apiClient is the HTTP client every test talks to the API with: each
// request and answer is held to docs/openapi.yaml, and one the document
// does not declare fails the test. It waits past the dev gateway's own
// limits (the API function's 10 s, HTTP API's 30 s integration timeout),
// so a slow answer reaches the test as the gateway's, not as the
// client's timeout racing it.
func apiClient(t *testing.T) *http.Client {
	return &http.Client{Timeout: 35 * time.Second, Transport: apispec.Transport(t, nil)}
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// send makes one request of the stack's API; a transport error is
// returned, not fatal: the retried requests try again on it.
func (s *stack) send(method, path, tenant string, headers map[string]string, body string) (response, error) {
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+tenant)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		_ = dec.Decode(&r.body)
	}
	return r, nil
}

// retryTries bounds retried: a dependency that stays down for five tries
// (about 15 s of waiting) is an outage the test should report, not ride
// out.
const retryTries = 5

// retried sends an idempotent request (a create with its Idempotency-Key,
// a cancel, a get) as a client does (docs/api.md, "Idempotency";
// pkg/client): again, after its Retry-After or a second per try so far,
// while the answer is a 5xx or never came. On a loaded machine the dev
// gateway answers 500 when the API function overruns its timeout, and
// the API 503 when a store call timed out: one such answer is the load,
// not the behaviour under test, and a real client would not give up on
// it. Each retry is logged; the last answer is returned, and a transport
// error on the last try fails the test.
func (s *stack) retried(method, path, tenant string, headers map[string]string, body string) (response, int) {
	s.t.Helper()
	for try := 1; ; try++ {
		r, err := s.send(method, path, tenant, headers, body)
		if try == retryTries {
			if err != nil {
				s.t.Fatalf("%s %s: %v, after %d tries", method, path, err, try)
			}
			return r, try
		}
		if err == nil && r.status < 500 {
			return r, try
		}
		wait := time.Duration(try) * time.Second
		if err == nil {
			if secs, convErr := strconv.Atoi(r.header.Get("Retry-After")); convErr == nil && secs > 0 {
				wait = time.Duration(secs) * time.Second
			}
			s.t.Logf("%s %s: %d %s; retrying in %s, as a client does", method, path, r.status, r.raw, wait)
		} else {
			s.t.Logf("%s %s: %v; retrying in %s, as a client does", method, path, err, wait)
		}
		time.Sleep(wait)
	}
}

// submit creates a job and returns its id. A create retried after a lost
// answer may find its own first try recorded: the repeat's 200 is then
// the job it asked for.
func (s *stack) submit(tenant, key, body string) string {
	s.t.Helper()
	r, tries := s.retried("POST", "/jobs", tenant, map[string]string{"Idempotency-Key": key}, body)
	if r.status != http.StatusAccepted && (tries == 1 || r.status != http.StatusOK) {
		s.t.Fatalf("create: %d %s", r.status, r.raw)
	}
	return r.body["id"].(string)
}

// cancel cancels a job, retried as a client does: a cancel of a job
// already abandoned answers its view again (pkg/api/cancel.go).
func (s *stack) cancel(tenant, id string) response {
	s.t.Helper()
	r, _ := s.retried("POST", "/jobs/"+id+"/cancel", tenant, nil, "")
	return r
}

// get reads a job, retried as a client does: a read changes nothing.
func (s *stack) get(tenant, id string) response {
	s.t.Helper()
	r, _ := s.retried("GET", "/jobs/"+id, tenant, nil, "")
	return r
}

// wait polls until the job is in one of states, and returns its view.
func (s *stack) wait(tenant, id string, timeout time.Duration, states ...string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var last response
	for time.Now().Before(deadline) {
		last = s.get(tenant, id)
		if last.status == http.StatusOK {
			for _, st := range states {
				if last.body["state"] == st {
					return last.body
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("job %s not in %v after %s: %d %s", id, states, timeout, last.status, last.raw)
	return nil
}

// sendRaw puts a message on the job queue directly, as a duplicate
// delivery or a poison message would arrive.
func (s *stack) sendRaw(body string) {
	s.t.Helper()
	if _, err := s.sqs.SendMessage(context.Background(), &awssqs.SendMessageInput{QueueUrl: aws.String(s.app.Config.QueueURL), MessageBody: aws.String(body)}); err != nil {
		s.t.Fatal(err)
	}
}

func jobBody(content string, extra string) string {
	b, _ := json.Marshal(content)
	s := `{"input":{"messages":[{"role":"user","content":` + string(b) + `}],"max_tokens":50}`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// seededHash is the input hash of a record a test writes to the store
// itself, shaped as the API's (docs/openapi.yaml holds every view to it).
func seededHash(t *testing.T, input []byte) string {
	t.Helper()
	h, err := job.InputHash([]byte(`{"input":` + string(input) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// num reads an exact JSON number field of a view as a string.
func num(v map[string]any, field string) string { return fmt.Sprint(v[field]) }

var _ model.Provider = (*fake.Provider)(nil)

// awaitProgress polls check every poll until it reports done, and fails
// the test, with stalled's account, only when check's progress figure
// has not moved for stall. A bound on the whole wait would be a benchmark
// of the machine: a run that keeps moving on a loaded laptop is slow, not
// stuck, and only one that stops moving is.
func awaitProgress(t *testing.T, stall, poll time.Duration, check func() (progress int, done bool), stalled func() string) {
	t.Helper()
	last, since := 0, time.Now()
	for first := true; ; first = false {
		n, done := check()
		if done {
			return
		}
		if first || n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > stall {
			t.Fatalf("no progress for %s: %s", stall, stalled())
		}
		time.Sleep(poll)
	}
}
