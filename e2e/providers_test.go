package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/aijobs/aijobs/pkg/job"
)

// The real provider clients (Anthropic Messages SSE, Bedrock ConverseStream
// through the AWS SDK, OpenAI chat-completions SSE) against local servers
// speaking their wire formats, behind the whole system on kumo: routes
// with fallback rungs, exact cost over rungs and retries, streaming
// progress written by the heartbeat, and a cancel that closes the stream.

// fakeProvider is one provider speaking its wire format, scripted per
// prompt marker and per call.
type fakeProvider struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
	// gone records when a call's client went away (keyed by marker).
	gone map[string]time.Time
	// script answers the n-th call (from 1) for a marker.
	script func(w http.ResponseWriter, r *http.Request, marker string, n int)
}

func newFakeProvider(t *testing.T, script func(w http.ResponseWriter, r *http.Request, marker string, n int)) *fakeProvider {
	f := &fakeProvider{calls: map[string]int{}, gone: map[string]time.Time{}, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		marker := ""
		if i := strings.Index(string(body), "[[e2e:"); i >= 0 {
			marker = strings.SplitN(string(body)[i+6:], "]]", 2)[0]
		}
		f.mu.Lock()
		f.calls[marker]++
		n := f.calls[marker]
		f.mu.Unlock()
		go func() {
			<-r.Context().Done()
			f.mu.Lock()
			if _, ok := f.gone[marker]; !ok {
				f.gone[marker] = time.Now()
			}
			f.mu.Unlock()
		}()
		f.script(w, r, marker, n)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) count(marker string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[marker]
}

func (f *fakeProvider) goneAt(marker string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.gone[marker]
	return t, ok
}

func sseEvent(w http.ResponseWriter, event, data string) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

// anthropicStart opens an Anthropic stream reporting in input tokens.
func anthropicStart(w http.ResponseWriter, in int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("request-id", "req_e2e")
	sseEvent(w, "message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-e2e","content":[],"stop_reason":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`, in))
	sseEvent(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
}

func anthropicDelta(w http.ResponseWriter, text string) {
	sseEvent(w, "content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text))
}

func anthropicEnd(w http.ResponseWriter, out int) {
	sseEvent(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	sseEvent(w, "message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, out))
	sseEvent(w, "message_stop", `{"type":"message_stop"}`)
}

func openaiDelta(w http.ResponseWriter, text string) {
	sseEvent(w, "", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"gpt-e2e","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, text))
}

func openaiEnd(w http.ResponseWriter, in, out int) {
	sseEvent(w, "", `{"id":"c1","object":"chat.completion.chunk","model":"gpt-e2e","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	sseEvent(w, "", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"gpt-e2e","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out))
	sseEvent(w, "", "[DONE]")
}

// bedrockEvent writes one ConverseStream event frame.
func bedrockEvent(w http.ResponseWriter, typ, payload string) {
	var m eventstream.Message
	m.Headers.Set(":event-type", eventstream.StringValue(typ))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Payload = []byte(payload)
	if err := eventstream.NewEncoder().Encode(w, m); err != nil {
		panic(http.ErrAbortHandler)
	}
	w.(http.Flusher).Flush()
}

func bedrockThrottled(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`)
}

func bedrockAnswer(w http.ResponseWriter, in, out int, pieces ...string) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	bedrockEvent(w, "messageStart", `{"role":"assistant"}`)
	for _, p := range pieces {
		bedrockEvent(w, "contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"text":%q}}`, p))
	}
	bedrockEvent(w, "contentBlockStop", `{"contentBlockIndex":0}`)
	bedrockEvent(w, "messageStop", `{"stopReason":"end_turn"}`)
	bedrockEvent(w, "metadata", fmt.Sprintf(`{"metrics":{"latencyMs":10},"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}`, in, out, in+out))
}

func TestRoutesOverTheProvidersWireFormats(t *testing.T) {
	t.Parallel()
	slowStarted := make(chan struct{}, 1)
	anthropic := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, marker string, n int) {
		if r.Header.Get("x-api-key") != "sk-ant-e2e" || r.URL.Path != "/v1/messages" {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		switch {
		case marker == "ladder": // overloaded mid-stream: 12 in, 3 out billed
			anthropicStart(w, 12)
			for _, p := range []string{"Once", " upon", " a"} {
				anthropicDelta(w, p)
			}
			sseEvent(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case marker == "retry" && n == 1: // the connection drops: 20 in, 2 out billed, retried
			anthropicStart(w, 20)
			anthropicDelta(w, "Half")
			anthropicDelta(w, " an")
			panic(http.ErrAbortHandler)
		case marker == "retry": // the second attempt answers: 20 in, 7 out
			anthropicStart(w, 20)
			anthropicDelta(w, "A whole answer")
			anthropicEnd(w, 7)
		case marker == "slow": // one token every 50 ms until the client goes
			anthropicStart(w, 30)
			for i := range 200 {
				if i == 5 {
					slowStarted <- struct{}{}
				}
				anthropicDelta(w, " tok")
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			anthropicEnd(w, 200)
		}
	})
	bedrock := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, marker string, n int) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || !strings.HasSuffix(r.URL.Path, "/converse-stream") {
			http.Error(w, "unsigned or not a stream", http.StatusForbidden)
			return
		}
		switch marker {
		case "ladder":
			bedrockThrottled(w)
		default:
			bedrockAnswer(w, 30, 4, "Bedrock", " says", " hi", ".")
		}
	})
	openai := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, marker string, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range []string{"The", " end", " of", " it"} {
			openaiDelta(w, p)
		}
		openaiEnd(w, 9, 5)
	})

	routes := fmt.Sprintf(`{
	  "providers": {
	    "anthropic": {"kind": "anthropic", "base_url": %q, "api_key_env": "E2E_ANTHROPIC_KEY"},
	    "bedrock":   {"kind": "bedrock", "region": "us-west-2", "endpoint": %q},
	    "openai":    {"kind": "openai", "base_url": %q}
	  },
	  "routes": {
	    "default": {"rungs": [{"provider": "anthropic", "model": "claude-e2e", "price": {"input": "300", "output": "1500"}, "timeout": "1s"}]},
	    "ladder": {
	      "rungs": [
	        {"provider": "anthropic", "model": "claude-e2e", "price": {"input": "300", "output": "1500"}, "timeout": "1s"},
	        {"provider": "bedrock", "model": "anthropic.claude-e2e-v1:0", "price": {"input": "250", "output": "1250"}, "timeout": "1s"},
	        {"provider": "openai", "model": "gpt-e2e", "price": {"input": "15", "output": "60"}, "max_tokens": 40, "timeout": "1s"}
	      ],
	      "fallback_on": ["overloaded", "rate_limited"]
	    },
	    "bedrock": {"rungs": [{"provider": "bedrock", "model": "anthropic.claude-e2e-v1:0", "price": {"input": "250", "output": "1250"}, "timeout": "2s"}]},
	    "slow": {"rungs": [{"provider": "anthropic", "model": "claude-e2e", "price": {"input": "300", "output": "1500"}, "timeout": "4s"}]}
	  }
	}`, anthropic.srv.URL, bedrock.srv.URL+"/", openai.srv.URL+"/v1")
	// A steady lease: with the harness's 1 s, a kumo call slow on a
	// loaded machine let an attempt's lease lapse, and the next attempt
	// wrote it off (an estimate where the exact cost is the point).
	s := startStackWith(t, map[string]string{"AIJOBS_ROUTES": routes, "E2E_ANTHROPIC_KEY": "sk-ant-e2e", "AIJOBS_LEASE_TTL": steadyLease["AIJOBS_LEASE_TTL"],
		"AIJOBS_WORKER_TIMEOUT": "30s", "AIJOBS_VISIBILITY_TIMEOUT": "31s"}, false)
	price := func(in, out string) job.Price {
		p, err := job.PricePerMillion(in, out)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	claude, titan, gpt := price("300", "1500"), price("250", "1250"), price("15", "60")
	body := func(marker, route string) string {
		return `{"model":"` + route + `","input":{"messages":[{"role":"user","content":"[[e2e:` + marker + `]] tell me"}],"max_tokens":100}}`
	}

	t.Run("fallback over three wire formats in one attempt", func(t *testing.T) {
		t.Parallel()
		id := s.submit("t", "ladder", body("ladder", "ladder"))
		v := s.wait("t", id, 10*time.Second, "succeeded")
		want := claude.Cost(12, 3) + titan.Cost(0, 0) + gpt.Cost(9, 5)
		if num(v, "attempts") != "1" || num(v, "cost_cents") != want.String() || v["result_model"] != "openai/gpt-e2e" {
			t.Fatalf("view %v, want cost %s from openai/gpt-e2e", v, want)
		}
		if anthropic.count("ladder") != 1 || bedrock.count("ladder") != 1 || openai.count("ladder") != 1 {
			t.Fatalf("calls: anthropic %d bedrock %d openai %d", anthropic.count("ladder"), bedrock.count("ladder"), openai.count("ladder"))
		}
	})
	t.Run("exact cost over two attempts", func(t *testing.T) {
		t.Parallel()
		id := s.submit("t", "retry", body("retry", "default"))
		v := s.wait("t", id, 10*time.Second, "succeeded")
		want := claude.Cost(20, 2) + claude.Cost(20, 7)
		if num(v, "attempts") != "2" || num(v, "cost_cents") != want.String() || anthropic.count("retry") != 2 {
			t.Fatalf("view %v (calls %d), want cost %s over 2 attempts", v, anthropic.count("retry"), want)
		}
	})
	t.Run("bedrock stream", func(t *testing.T) {
		t.Parallel()
		id := s.submit("t", "bedrock", body("bedrock", "bedrock"))
		v := s.wait("t", id, 10*time.Second, "succeeded")
		res, _ := v["result"].(map[string]any)
		if num(v, "cost_cents") != titan.Cost(30, 4).String() || v["result_model"] != "bedrock/anthropic.claude-e2e-v1:0" || res["output"] != "Bedrock says hi." {
			t.Fatalf("view %v", v)
		}
	})
	t.Run("progress while streaming, and a cancel closes the stream", func(t *testing.T) {
		t.Parallel()
		id := s.submit("t", "slow", body("slow", "slow"))
		<-slowStarted
		var progress float64
		deadline := time.Now().Add(5 * time.Second)
		for progress == 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			var p json.Number
			p, _ = s.get("t", id).body["progress"].(json.Number)
			progress, _ = p.Float64()
		}
		if progress <= 0 || progress >= 1 {
			t.Fatalf("progress %v while streaming, want between 0 and 1 (tokens so far / 100)", progress)
		}
		if r := s.cancel("t", id); r.status != http.StatusOK {
			t.Fatalf("cancel: %d %s", r.status, r.raw)
		}
		// From the cancel's answer, when its write has landed: the worker's
		// part is its next heartbeat (100 ms here) and stopping the call;
		// the request's own time under make test's load is not the
		// worker's.
		cancelled := time.Now()
		s.wait("t", id, 5*time.Second, "abandoned")
		deadline = time.Now().Add(3 * time.Second)
		gone, ok := anthropic.goneAt("slow")
		for !ok && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			gone, ok = anthropic.goneAt("slow")
		}
		t.Logf("stream closed %s after the cancel landed", gone.Sub(cancelled))
		if !ok || gone.Sub(cancelled) > time.Second {
			t.Fatalf("the stream was not closed within a second of the cancel (closed: %v, after %s)", ok, gone.Sub(cancelled))
		}
		// The discarded attempt is still paid for: the 30 input tokens the
		// server reported and the tokens that arrived.
		time.Sleep(500 * time.Millisecond)
		v := s.get("t", id).body
		var cost job.Nanocents
		if err := cost.UnmarshalJSON([]byte(num(v, "cost_cents"))); err != nil || cost < claude.Cost(30, 5) || cost > claude.Cost(30, 200) {
			t.Fatalf("cost of the cancelled attempt %v (%v), want 30 input and at least 5 output tokens' worth", v["cost_cents"], err)
		}
		if v["error_class"] != "cancelled" {
			t.Fatalf("view %v", v)
		}
	})
}
