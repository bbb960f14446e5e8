package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/s3"
)

// answeringModel is an OpenAI-compatible server that answers every call
// at once and counts the generations (each one billed).
type answeringModel struct{ calls atomic.Int32 }

func (m *answeringModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	m.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "parked"}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

// refusingSuccesses is a proxy in front of the emulator that answers
// every DynamoDB UpdateItem recording a success with DynamoDB's
// InternalServerError (HTTP 500, which the SDK retries and then reports),
// and passes everything else through: S3 included, which shares the
// endpoint. DynamoDB answers a 500 for an internal failure of its own
// (the DynamoDB developer guide, "Error handling with DynamoDB": 5xx
// errors), so a write refused this way may be retried.
func refusingSuccesses(t *testing.T, endpoint string) string {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the killed worker's calls, cut off
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") && bytes.Contains(body, []byte(`":succeeded"`)) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected"}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAWorkerKilledAfterParkingIsSettledByAnother: the first worker gets
// the model's answer but the table refuses every write that records it;
// it parks the outcome in the S3 bucket, and is killed (SIGKILL) before
// its invocation ends. A second dev server, on a healthy table, finds the
// attempt dead once its lease runs out and records the parked answer:
// one generation, the exact cost, nothing estimated, nothing held, the
// bucket empty again.
func TestAWorkerKilledAfterParkingIsSettledByAnother(t *testing.T) {
	t.Parallel()
	bin := buildDevServer(t)
	model := &answeringModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	prefix := awstest.Prefix(t)
	env := testEnv(prefix, refusingSuccesses(t, awstest.Endpoint(t)))
	env["AIJOBS_MODEL_PROVIDER"] = "openai"
	env["OPENAI_BASE_URL"] = srv.URL
	env["AIJOBS_OPENAI_STREAM"] = "false"

	first, apiURL := startDevProcess(t, bin, env)
	s := &stack{t: t, url: apiURL, client: apiClient(t)}
	id := s.submit("t", "parked", jobBody("park me", ""))

	c := s3.NewClient(awstest.Config(t, nil))
	parked := func() (int, error) {
		out, err := c.ListObjectsV2(t.Context(), &awss3.ListObjectsV2Input{Bucket: aws.String(prefix + "-parked"), Prefix: aws.String("parked/" + id + "/")})
		if err != nil {
			return 0, err
		}
		return len(out.Contents), nil
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, err := parked(); n == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("nothing parked for %s (err %v)", id, err)
		}
	}
	if v := s.get("t", id).body; v["state"] != "running" {
		t.Fatalf("the first worker's success landed after all (%v): the table did not refuse it", v["state"])
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	env["AWS_ENDPOINT_URL"] = awstest.Endpoint(t)
	_, s.url = startDevProcess(t, bin, env)
	v := s.wait("t", id, 30*time.Second, "succeeded")
	// 10 prompt tokens at 100 and 5 completion tokens at 400 cents per
	// million: the one generation's exact cost.
	if n := model.calls.Load(); n != 1 || num(v, "attempts") != "1" {
		t.Fatalf("%d model calls, attempts %v: want the parked answer recorded, not generated again", n, v["attempts"])
	}
	if num(v, "cost_cents") != "0.003" || v["cost_estimated"] == true || num(v, "reserved_cents") != "0" {
		t.Fatalf("cost_cents %v, cost_estimated %v, reserved_cents %v: want exactly 0.003, nothing held", v["cost_cents"], v["cost_estimated"], v["reserved_cents"])
	}
	if out, ok := v["result"].(map[string]any); !ok || out["output"] != "parked" {
		t.Fatalf("result %v, want the parked answer", v["result"])
	}
	if n, err := parked(); n != 0 || err != nil {
		t.Fatalf("%d parked outcomes left (%v), want the settled one deleted", n, err)
	}
}
