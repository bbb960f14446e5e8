package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
)

// openAIServer is an OpenAI-compatible chat-completions server that hangs
// on the first call (until the client goes away) and answers later ones:
// the model side of a worker killed mid-call.
type openAIServer struct {
	mu        sync.Mutex
	calls     int
	completed int
	first     chan struct{}
	stop      chan struct{}
}

func (o *openAIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Reading the whole body lets the server notice the client going away.
	_, _ = io.Copy(io.Discard, r.Body)
	o.mu.Lock()
	o.calls++
	n := o.calls
	o.mu.Unlock()
	if n == 1 {
		close(o.first)
		select { // the worker process dies with this call open
		case <-r.Context().Done():
		case <-o.stop:
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "survived"}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	o.mu.Lock()
	o.completed++
	o.mu.Unlock()
}

// buildDevServer builds the dev server binary for tests that kill and
// restart it, and returns its path.
func buildDevServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aijobs-dev")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/aijobs-dev").CombinedOutput(); err != nil {
		t.Fatalf("build dev server: %v\n%s", err, out)
	}
	return bin
}

var apiLine = regexp.MustCompile(`API:\s+(http://\S+)`)

// startDevProcess runs the dev server binary and returns its API URL.
func startDevProcess(t *testing.T, bin string, env map[string]string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	select {
	case u := <-urls:
		return cmd, u
	case <-time.After(30 * time.Second):
		t.Fatal("dev server did not start")
	}
	return nil, ""
}

func TestWorkerKilledMidCallIsFinishedByAnother(t *testing.T) {
	t.Parallel()
	bin := buildDevServer(t)
	model := &openAIServer{first: make(chan struct{}), stop: make(chan struct{})}
	srv := httptest.NewServer(model)
	defer srv.Close()
	defer close(model.stop)
	env := testEnv(awstest.Prefix(t), awstest.Endpoint(t))
	env["AIJOBS_MODEL_PROVIDER"] = "openai"
	env["OPENAI_BASE_URL"] = srv.URL
	env["AIJOBS_OPENAI_STREAM"] = "false"

	first, url := startDevProcess(t, bin, env)
	s := &stack{t: t, url: url, client: apiClient(t)}
	id := s.submit("t", "killed", jobBody("survive a crash", ""))
	select {
	case <-model.first:
	case <-time.After(15 * time.Second):
		t.Fatal("the first worker never called the model")
	}
	held := num(s.get("t", id).body, "reserved_cents") // the first attempt's hold
	if err := first.Process.Kill(); err != nil {       // SIGKILL: no outcome is recorded
		t.Fatal(err)
	}
	_ = first.Wait()

	_, url = startDevProcess(t, bin, env)
	s.url = url
	v := s.wait("t", id, 30*time.Second, "succeeded")
	model.mu.Lock()
	calls, completed := model.calls, model.completed
	model.mu.Unlock()
	if num(v, "attempts") != "2" || calls != 2 || completed != 1 {
		t.Fatalf("attempts %v, model calls %d, completed %d: want 2, 2, 1", v["attempts"], calls, completed)
	}
	// 10 prompt tokens at 100 and 5 completion tokens at 400 cents per
	// million for the second attempt; the killed attempt reported no usage,
	// so its hold was charged instead, as an upper estimate (job.WriteOff),
	// and nothing is held any more.
	want, ok := new(big.Rat).SetString("0.003")
	h, hok := new(big.Rat).SetString(held)
	got, gok := new(big.Rat).SetString(num(v, "cost_cents"))
	if !ok || !hok || !gok || h.Sign() <= 0 || got.Cmp(want.Add(want, h)) != 0 {
		t.Fatalf("cost_cents = %s, want 0.003 + the dead attempt's hold %s", num(v, "cost_cents"), held)
	}
	if v["cost_estimated"] != true || num(v, "reserved_cents") != "0" {
		t.Fatalf("cost_estimated %v, reserved_cents %v: want the estimate marked and nothing held", v["cost_estimated"], v["reserved_cents"])
	}
}
