package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

const (
	apiKey = "sk-test-SECRET-key"
	// prompt is what must never leak into an error.
	prompt = "SECRET-PROMPT tell me a story"
)

// promptCeiling is job.PromptCeiling of the test prompt, what a call is
// billed for the prompt the server never counted: (29+1)/2 + 8.
const promptCeiling = 23

// maxTokens is what the tests that lose an answer ask for (capped): a
// non-streamed call that was sent is billed all of it.
const maxTokens = 300

// worstCase is the bill of a non-streamed call sent whose answer was lost.
var worstCase = model.Usage{InputTokens: promptCeiling, OutputTokens: maxTokens, Estimated: true}

func newClient(t *testing.T, baseURL string, stream bool) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: baseURL, APIKey: apiKey, Model: "cfg-model", Stream: stream})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func request() model.Request {
	return model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: prompt}}}
}

// capped is request() with max_tokens set, as the worker always sets it.
func capped() model.Request {
	r := request()
	r.MaxTokens = maxTokens
	return r
}

// asModelError fails the test unless err is a *model.Error free of secrets.
func asModelError(t *testing.T, err error, secrets ...string) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	for _, s := range append([]string{apiKey, prompt, "SECRET"}, secrets...) {
		if strings.Contains(me.Detail, s) || strings.Contains(err.Error(), s) {
			t.Fatalf("error leaks %q: detail %q, error %q", s, me.Detail, err.Error())
		}
	}
	if class, usage := model.Classify(err); class != me.Class || usage != me.Usage {
		t.Fatalf("Classify = %q %+v, want %q %+v", class, usage, me.Class, me.Usage)
	}
	return me
}

// sse writes one server-sent event and flushes it to the client.
func sse(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func contentChunk(s string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":null}],"usage":null}`, s)
}

const (
	roleChunk   = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`
	finishChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"%s"}],"usage":null}`
	usageChunk  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`
)

const completion = `{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1700000000,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "Once upon a time.", "refusal": null},
    "logprobs": null,
    "finish_reason": "%s"
  }],
  "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19,
    "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}},
  "system_fingerprint": "fp_0123456789"
}`

func TestGenerateRequestAndResponse(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name     string
		key      string
		r        func(model.Request) model.Request
		wantBody map[string]any
	}{
		{
			name: "config model, defaults omitted",
			key:  apiKey,
			r:    func(r model.Request) model.Request { return r },
			wantBody: map[string]any{"model": "cfg-model",
				"messages": []any{map[string]any{"role": "user", "content": prompt}}},
		},
		{
			name: "request model, max tokens, zero temperature is sent",
			key:  apiKey,
			r: func(r model.Request) model.Request {
				r.Model, r.MaxTokens, r.Temperature = "req-model", 256, &zero
				r.Messages = append([]job.Message{{Role: "system", Content: "be brief"}}, r.Messages...)
				return r
			},
			wantBody: map[string]any{"model": "req-model", "max_tokens": 256.0, "temperature": 0.0,
				"messages": []any{map[string]any{"role": "system", "content": "be brief"},
					map[string]any{"role": "user", "content": prompt}}},
		},
		{
			name: "no key for Ollama",
			r:    func(r model.Request) model.Request { return r },
			wantBody: map[string]any{"model": "cfg-model",
				"messages": []any{map[string]any{"role": "user", "content": prompt}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
					t.Errorf("got %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
				}
				if got := r.Header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type %q", got)
				}
				wantAuth := ""
				if tt.key != "" {
					wantAuth = "Bearer " + tt.key
				}
				if got := r.Header.Get("Authorization"); got != wantAuth {
					t.Errorf("Authorization %q, want %q", got, wantAuth)
				}
				var body map[string]any
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					t.Errorf("decode body: %v", err)
				}
				if got, want := fmt.Sprint(body), fmt.Sprint(tt.wantBody); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, completion, "stop")
			}))
			defer srv.Close()
			c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1/", APIKey: tt.key, Model: "cfg-model"})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var progress []int
			r := tt.r(request())
			r.Progress = func(n int) { progress = append(progress, n) }
			resp, err := c.Generate(context.Background(), r)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			want := model.Response{Output: "Once upon a time.", Model: "gpt-4o-mini-2024-07-18", FinishReason: "stop",
				Usage: model.Usage{InputTokens: 12, OutputTokens: 7}}
			if resp != want {
				t.Fatalf("got %+v\nwant %+v", resp, want)
			}
			if fmt.Sprint(progress) != "[7]" {
				t.Fatalf("progress %v, want [7]", progress)
			}
		})
	}
}

// A server that drops usage is billed an upper estimate: the prompt
// ceiling, and the answer at two bytes a token, at most max_tokens.
func TestGenerateWithoutUsageEstimates(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"model":"llama3","choices":[{"index":0,"message":{"role":"assistant","content":"0123456789"},"finish_reason":"length"}]}`)
	}))
	defer srv.Close()
	for maxTokens, out := range map[int]int64{0: 5, 300: 5, 4: 4} {
		r := request()
		r.MaxTokens = maxTokens
		resp, err := newClient(t, srv.URL, false).Generate(context.Background(), r)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if want := (model.Usage{InputTokens: promptCeiling, OutputTokens: out, Estimated: true}); resp.Usage != want {
			t.Fatalf("max tokens %d: usage %+v, want %+v", maxTokens, resp.Usage, want)
		}
		if resp.FinishReason != "length" {
			t.Fatalf("finish reason %q, want length", resp.FinishReason)
		}
	}
}

func TestGenerateStream(t *testing.T) {
	tests := []struct {
		name      string
		withUsage bool
		finish    string
		usage     model.Usage
		progress  string
		// usageChunk replaces the usual usage chunk (4 tokens)
		usageChunk string
	}{
		{name: "usage chunk is exact", withUsage: true, finish: "stop",
			usage: model.Usage{InputTokens: 9, OutputTokens: 4}, progress: "[1 2 3 4]"},
		{name: "no usage chunk is estimated", finish: "length",
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 3, Estimated: true}, progress: "[1 2 3]"},
		// A final count below the chunks seen never moves progress back
		// (found by FuzzStream).
		{name: "a usage chunk below the chunks seen", finish: "stop", usageChunk: `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}`,
			usage: model.Usage{InputTokens: 9, OutputTokens: 2}, progress: "[1 2 3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			progressed := make(chan int, 8)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct {
					Stream        *bool `json:"stream"`
					StreamOptions *struct {
						IncludeUsage *bool `json:"include_usage"`
					} `json:"stream_options"`
				}
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					t.Errorf("decode body: %v", err)
				}
				if body.Stream == nil || !*body.Stream || body.StreamOptions == nil ||
					body.StreamOptions.IncludeUsage == nil || !*body.StreamOptions.IncludeUsage {
					t.Errorf("stream request lacks stream:true and stream_options.include_usage:true")
				}
				w.Header().Set("Content-Type", "text/event-stream")
				sse(w, roleChunk)
				fmt.Fprint(w, ": keep-alive\n\n")
				for _, s := range []string{"Once", " upon", " a time."} {
					sse(w, contentChunk(s))
					// The client reports each chunk before the next is sent:
					// progress is live, not computed after the body is read.
					select {
					case <-progressed:
					case <-time.After(5 * time.Second):
						t.Errorf("no progress reported for chunk %q while streaming", s)
					}
				}
				sse(w, fmt.Sprintf(finishChunk, tt.finish))
				if tt.withUsage {
					sse(w, usageChunk)
				}
				if tt.usageChunk != "" {
					sse(w, tt.usageChunk)
				}
				sse(w, "[DONE]")
			}))
			defer srv.Close()
			var progress []int
			r := request()
			r.Progress = func(n int) {
				progress = append(progress, n)
				progressed <- n
			}
			resp, err := newClient(t, srv.URL, true).Generate(context.Background(), r)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			want := model.Response{Output: "Once upon a time.", Model: "gpt-4o-mini-2024-07-18", FinishReason: tt.finish,
				Usage: tt.usage}
			if resp != want {
				t.Fatalf("got %+v\nwant %+v", resp, want)
			}
			if got := fmt.Sprint(progress); got != tt.progress {
				t.Fatalf("progress %s, want %s", got, tt.progress)
			}
		})
	}
}

func TestErrorBodies(t *testing.T) {
	tests := []struct {
		status int
		file   string // under testdata/errors; "" for an empty body
		class  job.ErrorClass
		detail string
	}{
		{429, "429_rate_limit.json", job.RateLimited, "http 429 rate_limit_exceeded tokens"},
		{429, "429_insufficient_quota.json", job.QuotaExhausted, "http 429 insufficient_quota insufficient_quota"},
		{429, "429_spend_limit.json", job.QuotaExhausted, "http 429 enforced_spend_limit_reached insufficient_quota"},
		{429, "", job.RateLimited, "http 429"},
		{400, "400_context_length.json", job.ContextLengthExceeded, "http 400 context_length_exceeded invalid_request_error"},
		{400, "400_content_filter.json", job.ContentFiltered, "http 400 content_filter"},
		{400, "400_content_policy.json", job.ContentFiltered, "http 400 content_policy_violation invalid_request_error"},
		{400, "400_invalid.json", job.InvalidRequest, "http 400 invalid_type invalid_request_error"},
		// vLLM says "context length" only in the message, which is never read.
		{400, "400_vllm.json", job.InvalidRequest, "http 400 400 BadRequestError"},
		{404, "404_model.json", job.InvalidRequest, "http 404 model_not_found invalid_request_error"},
		{409, "409.json", job.InvalidRequest, "http 409 invalid_request_error"},
		{413, "413.json", job.InvalidRequest, "http 413 invalid_request_error"},
		{422, "422.json", job.InvalidRequest, "http 422 invalid_request_error"},
		{401, "401.json", job.Auth, "http 401 invalid_api_key invalid_request_error"},
		{403, "403.json", job.Auth, "http 403 unsupported_country_region_territory request_forbidden"},
		{500, "500.json", job.ProviderError, "http 500 server_error"},
		{502, "502.html", job.ProviderError, "http 502"},
		{503, "503.json", job.Overloaded, "http 503 server_error"},
		{529, "529.json", job.Overloaded, "http 529 overloaded_error"},
		{418, "", job.Internal, "http 418"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.file), func(t *testing.T) {
			var body []byte
			var message string
			if tt.file != "" {
				var err error
				if body, err = os.ReadFile(filepath.Join("testdata", "errors", tt.file)); err != nil {
					t.Fatalf("read fixture: %v", err)
				}
				var eb struct {
					Error struct{ Message string } `json:"error"`
				}
				if json.Unmarshal(body, &eb) == nil {
					message = eb.Error.Message
				}
			}
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(tt.status)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			for _, stream := range []bool{false, true} {
				requests.Store(0)
				_, err := newClient(t, srv.URL, stream).Generate(context.Background(), request())
				secrets := []string{}
				if message != "" {
					secrets = append(secrets, message, message[:len(message)/2])
				}
				me := asModelError(t, err, secrets...)
				if me.Class != tt.class || me.Detail != tt.detail {
					t.Fatalf("stream=%v: class %q detail %q, want %q %q", stream, me.Class, me.Detail, tt.class, tt.detail)
				}
				if me.Usage != (model.Usage{}) {
					t.Fatalf("a refused call is billed: %+v", me.Usage)
				}
				if n := requests.Load(); n != 1 {
					t.Fatalf("stream=%v: %d requests, want exactly 1 (no retries)", stream, n)
				}
			}
		})
	}
}

func TestBadSuccessfulResponses(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		write  func(w http.ResponseWriter)
		class  job.ErrorClass
		usage  model.Usage
	}{
		{
			// The server answered 200: it may have generated all it was asked.
			name:  "body is not JSON",
			write: func(w http.ResponseWriter) { fmt.Fprint(w, "<html>hello</html>") },
			class: job.ProviderError,
			usage: worstCase,
		},
		{
			name: "no choices",
			write: func(w http.ResponseWriter) {
				fmt.Fprint(w, `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`)
			},
			class: job.ProviderError,
			usage: model.Usage{InputTokens: 3},
		},
		{
			name:  "no choices, no usage",
			write: func(w http.ResponseWriter) { fmt.Fprint(w, `{"choices":[]}`) },
			class: job.ProviderError,
			usage: worstCase,
		},
		{
			name:  "finish reason content filter is billed",
			write: func(w http.ResponseWriter) { fmt.Fprintf(w, completion, "content_filter") },
			class: job.ContentFiltered,
			usage: model.Usage{InputTokens: 12, OutputTokens: 7},
		},
		{
			name:   "stream finish reason content filter is billed",
			stream: true,
			write: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, fmt.Sprintf(finishChunk, "content_filter"))
				sse(w, usageChunk)
				sse(w, "[DONE]")
			},
			class: job.ContentFiltered,
			usage: model.Usage{InputTokens: 9, OutputTokens: 4},
		},
		{
			name:   "stream chunk is not JSON",
			stream: true,
			write: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, "{not json")
			},
			class: job.ProviderError,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true},
		},
		{
			name:   "stream carries an error object",
			stream: true,
			write: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, contentChunk(" upon"))
				sse(w, `{"error":{"message":"The server had an error processing SECRET-PROMPT","type":"server_error","param":null,"code":null}}`)
			},
			class: job.ProviderError,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 2, Estimated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tt.write(w) }))
			defer srv.Close()
			_, err := newClient(t, srv.URL, tt.stream).Generate(context.Background(), capped())
			me := asModelError(t, err)
			if me.Class != tt.class || me.Usage != tt.usage {
				t.Fatalf("got %q %+v, want %q %+v", me.Class, me.Usage, tt.class, tt.usage)
			}
		})
	}
}

func TestCancelClosesStream(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse(w, contentChunk("Once"))
		sse(w, contentChunk(" upon"))
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
			t.Error("client kept the stream open after cancelling")
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := request()
	r.Progress = func(n int) {
		if n == 2 {
			cancel()
		}
	}
	_, err := newClient(t, srv.URL, true).Generate(ctx, r)
	me := asModelError(t, err)
	if me.Class != job.Cancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("class %q, want cancelled (%v)", me.Class, err)
	}
	// Money spent on a cancelled stream is still spent.
	if me.Usage != (model.Usage{InputTokens: promptCeiling, OutputTokens: 2, Estimated: true}) {
		t.Fatalf("usage %+v, want the two chunks received billed", me.Usage)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("server never saw the client go away")
	}
}

// An answer lost after the request was sent is billed: a non-streamed
// one at the worst case (the server finishes the generation and bills
// it), a stream at what it told before the cut, estimated.
func TestConnectionDrops(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		write  func(w http.ResponseWriter, r *http.Request)
		usage  model.Usage
	}{
		{
			name: "after the request, before the headers",
			write: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				panic(http.ErrAbortHandler)
			},
			usage: worstCase,
		},
		{
			name:   "stream after the request, before the headers",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				panic(http.ErrAbortHandler)
			},
			usage: model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name:   "stream after the headers, before the first event",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			usage: model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name:   "mid stream",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				sse(w, contentChunk("Once"))
				sse(w, contentChunk(" upon"))
				panic(http.ErrAbortHandler)
			},
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 2, Estimated: true},
		},
		{
			name:   "stream ends without [DONE]",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				sse(w, contentChunk("Once"))
			},
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true},
		},
		{
			name:   "stream cut after the usage chunk",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				sse(w, contentChunk("Once"))
				sse(w, fmt.Sprintf(finishChunk, "stop"))
				sse(w, usageChunk)
				panic(http.ErrAbortHandler)
			},
			usage: model.Usage{InputTokens: 9, OutputTokens: 4}, // the server's own count
		},
		{
			name: "mid body",
			write: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1000")
				fmt.Fprint(w, `{"id":"chatcmpl-abc123","choices":[{"index":0,`)
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			usage: worstCase,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				tt.write(w, r)
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, tt.stream).Generate(context.Background(), capped())
			me := asModelError(t, err)
			if me.Class != job.Network {
				t.Fatalf("class %q, want network (%v)", me.Class, err)
			}
			if me.Usage != tt.usage {
				t.Fatalf("usage %+v, want %+v billed", me.Usage, tt.usage)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

// A request that never reached the server cost nothing.
func TestNeverSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	refused := "http://" + l.Addr().String() + "/v1"
	_ = l.Close()
	var requests atomic.Int32
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	for _, stream := range []bool{false, true} {
		for name, url := range map[string]string{"connection refused": refused, "TLS certificate not trusted": tlsSrv.URL} {
			_, err = newClient(t, url, stream).Generate(context.Background(), capped())
			if me := asModelError(t, err); me.Class != job.Network || me.Usage != (model.Usage{}) {
				t.Fatalf("%s, stream=%v: class %q usage %+v, want network and nothing billed (%v)", name, stream, me.Class, me.Usage, err)
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the TLS server", n)
	}
}

func TestTimeouts(t *testing.T) {
	tests := []struct {
		name     string
		deadline time.Duration // on the call's context; 0: none
		cancel   time.Duration // cancel the call's context after this; 0: never
		client   openai.Doer   // nil: the default client
		stream   bool
		class    job.ErrorClass
		target   error // what the error must wrap, if anything
		usage    model.Usage
	}{
		{name: "call deadline before headers", deadline: 50 * time.Millisecond, class: job.Timeout, target: context.DeadlineExceeded,
			usage: worstCase},
		{name: "call deadline before stream headers", deadline: 50 * time.Millisecond, stream: true, class: job.Timeout,
			target: context.DeadlineExceeded, usage: model.Usage{InputTokens: promptCeiling, Estimated: true}},
		{name: "call deadline mid stream", deadline: 300 * time.Millisecond, stream: true, class: job.Timeout, target: context.DeadlineExceeded,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true}},
		{name: "cancelled before headers", cancel: 50 * time.Millisecond, class: job.Cancelled, target: context.Canceled,
			usage: worstCase},
		{name: "cancelled before stream headers", cancel: 50 * time.Millisecond, stream: true, class: job.Cancelled,
			target: context.Canceled, usage: model.Usage{InputTokens: promptCeiling, Estimated: true}},
		{name: "http client timeout", client: &http.Client{Timeout: 50 * time.Millisecond}, class: job.Timeout, usage: worstCase},
		{name: "response header timeout", class: job.Timeout, usage: worstCase,
			client: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			midStream := tt.usage.OutputTokens > 0 && tt.stream
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Reading the whole request lets the server notice the
				// client hanging up, as a real one would.
				_, _ = io.Copy(io.Discard, r.Body)
				if midStream {
					sse(w, contentChunk("Once"))
				}
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			if tt.deadline > 0 {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeout(ctx, tt.deadline)
				defer stop()
			}
			c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: apiKey, Stream: tt.stream, HTTPClient: tt.client})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			start := time.Now()
			_, err = c.Generate(ctx, capped())
			if time.Since(start) > 5*time.Second {
				t.Fatal("the call outlived its timeout")
			}
			me := asModelError(t, err)
			if me.Class != tt.class {
				t.Fatalf("class %q, want %q (%v)", me.Class, tt.class, err)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("%v does not wrap %v", err, tt.target)
			}
			if me.Usage != tt.usage {
				t.Fatalf("usage %+v, want %+v", me.Usage, tt.usage)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := openai.New(openai.Config{}); err == nil {
		t.Fatal("New accepted an empty base URL")
	}
	c, err := openai.New(openai.Config{BaseURL: "http://localhost:11434/v1"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var _ model.Provider = c
}

// The package must not read its configuration from the environment: main
// does, so one process can hold differently configured clients.
func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("Authorization %q, want none", got)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, completion, "stop")
	}))
	defer srv.Close()
	c, err := openai.New(openai.Config{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := c.Generate(context.Background(), request()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
}
