package providers_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aijobs/aijobs/pkg/app/providers"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// functionEnv is a worker function's environment with one Bedrock route
// whose endpoint is bedrockURL: Lambda's credentials and region (AWS
// Lambda Developer Guide, "Defined runtime environment variables",
// written here since no Lambda runs these tests) and the stack's queue.
func functionEnv(bedrockURL string) map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID": "ASIAWORKERROLE", "AWS_SECRET_ACCESS_KEY": "worker-secret", "AWS_SESSION_TOKEN": "worker-token",
		"AWS_REGION": "eu-west-1", "AIJOBS_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/aijobs-jobs",
		"AIJOBS_ROUTES": fmt.Sprintf(`{"providers":{"bedrock":{"kind":"bedrock","endpoint":%q,"stream":false}},
			"routes":{"default":{"rungs":[{"provider":"bedrock","model":"anthropic.test-v1:0","price":{"input":"1","output":"2"}}]}}}`, bedrockURL),
	}
}

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// The worker's Bedrock calls sign with the function role's credentials
// from its environment, the same the table and queue calls use.
func TestBedrockSignsWithTheFunctionsCredentials(t *testing.T) {
	var mu sync.Mutex
	var auth, token string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth, token = r.Header.Get("Authorization"), r.Header.Get("X-Amz-Security-Token")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn",
			"usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4},"metrics":{"latencyMs":1}}`))
	}))
	t.Cleanup(srv.Close)
	b, err := roles.FromEnv(t.Context(), getenv(functionEnv(srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := providers.New(t.Context(), b, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p["bedrock"].Generate(t.Context(), model.Request{Model: "anthropic.test-v1:0", Messages: []job.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(auth, "Credential=ASIAWORKERROLE/") || !strings.Contains(auth, "/eu-west-1/bedrock/aws4_request") {
		t.Errorf("Authorization %q: want the role's key, the function's region, Bedrock's signing name", auth)
	}
	if token != "worker-token" {
		t.Errorf("session token %q, want the role's", token)
	}
}

// A worker without credentials in its environment fails while it is
// wired (Lambda's Init), before any call, even when its table and queues
// are an emulator's: Bedrock is real AWS.
func TestWorkerWithoutCredentialsFailsAtInit(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	t.Cleanup(srv.Close)
	env := functionEnv(srv.URL)
	delete(env, "AWS_ACCESS_KEY_ID")
	delete(env, "AWS_SECRET_ACCESS_KEY")
	delete(env, "AWS_SESSION_TOKEN")
	if _, err := roles.FromEnv(t.Context(), getenv(env)); !errors.Is(err, awsclient.ErrNoCredentials) {
		t.Fatalf("wiring without credentials: %v, want ErrNoCredentials", err)
	}
	env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1"
	b, err := roles.FromEnv(t.Context(), getenv(env))
	if err != nil {
		t.Fatalf("wiring against an emulator needs no credentials: %v", err)
	}
	if _, err := providers.New(t.Context(), b, providers.Options{}); !errors.Is(err, awsclient.ErrNoCredentials) {
		t.Errorf("Bedrock without credentials: %v, want ErrNoCredentials", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls to Bedrock while wiring", n)
	}
}
