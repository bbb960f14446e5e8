package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
)

// responsesServer is an OpenAI Responses API server in background mode:
// a create starts a generation (billed once, whatever becomes of its
// caller) and answers its id at once; the generation stays in_progress
// until release is closed, then polls see it completed. It keeps
// generations for the test's life, as OpenAI keeps a background response
// for about ten minutes.
type responsesServer struct {
	mu       sync.Mutex
	creates  int
	polls    int
	cancels  int
	polled   chan struct{} // closed at the first poll
	release  chan struct{}
	pollOnce sync.Once
}

func (s *responsesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/responses":
		s.creates++
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "resp_1", "object": "response", "status": "queued", "model": "test-model"})
	case r.Method == http.MethodGet && r.URL.Path == "/responses/resp_1":
		s.polls++
		s.pollOnce.Do(func() { close(s.polled) })
		select {
		case <-s.release:
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "resp_1", "object": "response", "status": "completed", "model": "test-model",
				"output": []any{map[string]any{"type": "message", "role": "assistant",
					"content": []any{map[string]any{"type": "output_text", "text": "kept for you"}}}},
				"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "resp_1", "object": "response", "status": "in_progress", "model": "test-model"})
		}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
		s.cancels++
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "resp_1", "object": "response", "status": "cancelled"})
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"not_found"}}`)
	}
}

func (s *responsesServer) counts() (creates, polls, cancels int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates, s.polls, s.cancels
}

// A worker killed while it waits for a background generation loses
// nothing: the worker that takes the job over fetches the generation the
// provider kept, by the id the dead attempt recorded, instead of paying
// for it again. The provider sees one generation, the job succeeds, and
// its cost is that generation's, once: the dead attempt's hold, charged
// as an estimate when it was written off, is replaced by it
// (docs/resume.md, "Resuming a paid generation").
func TestAKilledWorkersBackgroundGenerationIsResumedNotPaidAgain(t *testing.T) {
	t.Parallel()
	bin := buildDevServer(t)
	model := &responsesServer{polled: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(model)
	defer srv.Close()
	env := testEnv(awstest.Prefix(t), awstest.Endpoint(t))
	env["AIJOBS_ROUTES"] = `{"providers": {"oa": {"kind": "openai", "base_url": "` + srv.URL + `", "background": true}},
		"routes": {"default": {"rungs": [{"provider": "oa", "model": "test-model", "price": {"input": "100", "output": "400"}, "max_tokens": 64}]}}}`

	first, url := startDevProcess(t, bin, env)
	s := &stack{t: t, url: url, client: apiClient(t)}
	id := s.submit("t", "resumed", jobBody("survive a crash", ""))
	select {
	case <-model.polled: // the id is on the record before the first poll
	case <-time.After(15 * time.Second):
		t.Fatal("the first worker never polled its generation")
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL: nothing is cancelled or recorded
		t.Fatal(err)
	}
	_ = first.Wait()
	close(model.release) // the provider finishes the generation meanwhile

	_, url = startDevProcess(t, bin, env)
	s.url = url
	v := s.wait("t", id, 30*time.Second, "succeeded")
	creates, polls, cancels := model.counts()
	if creates != 1 || polls < 2 || cancels != 0 {
		t.Fatalf("creates %d, polls %d, cancels %d: want one generation, polled by both workers, never cancelled", creates, polls, cancels)
	}
	if num(v, "attempts") != "2" {
		t.Fatalf("attempts %v, want 2 (the killed one and the one that resumed)", v["attempts"])
	}
	// 10 input tokens at 100 and 5 output tokens at 400 cents per million,
	// once; nothing held any more.
	if num(v, "cost_cents") != "0.003" || num(v, "reserved_cents") != "0" {
		t.Fatalf("cost_cents %v, reserved_cents %v: want the one generation's 0.003, nothing held", v["cost_cents"], v["reserved_cents"])
	}
	res, _ := v["result"].(map[string]any)
	if res["output"] != "kept for you" {
		t.Fatalf("result %v, want the kept generation's output", v["result"])
	}
}
