package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// The transport's contract (one request, no redirect, what a lost or cut
// answer is billed, timeouts) is the conformance suite's (wire_test.go);
// this file holds what is OpenAI's own: the request it sends, its error
// bodies, its odd answers.

// TestConformance holds the provider to the contract every provider keeps
// (pkg/model/modeltest), over this wire format.
func TestConformance(t *testing.T) { modeltest.RunHTTP(t, wire()) }

// worstCase is the bill of a non-streamed call sent whose answer was lost.
var worstCase = model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: modeltest.MaxTokens, Estimated: true}

// request is a generation that leaves every option to the defaults.
var request = modeltest.Bare

func TestGenerateRequest(t *testing.T) {
	zero := 0.0
	user := map[string]any{"role": "user", "content": modeltest.Prompt}
	tests := []struct {
		name     string
		key      string
		stream   bool
		r        func(model.Request) model.Request
		wantBody map[string]any
	}{
		{
			name:     "config model, defaults omitted",
			key:      apiKey,
			r:        func(r model.Request) model.Request { return r },
			wantBody: map[string]any{"model": "cfg-model", "messages": []any{user}},
		},
		{
			name: "request model, max tokens, zero temperature is sent",
			key:  apiKey,
			r: func(r model.Request) model.Request {
				r.Model, r.MaxTokens, r.Temperature = "req-model", 256, &zero
				r.Messages = append([]job.Message{{Role: "system", Content: "be brief"}}, r.Messages...)
				return r
			},
			wantBody: map[string]any{"model": "req-model", "max_completion_tokens": 256.0, "temperature": 0.0,
				"messages": []any{map[string]any{"role": "system", "content": "be brief"}, user}},
		},
		{
			name:     "no key for Ollama",
			r:        func(r model.Request) model.Request { return r },
			wantBody: map[string]any{"model": "cfg-model", "messages": []any{user}},
		},
		{
			name:   "a stream asks for its usage",
			key:    apiKey,
			stream: true,
			r:      func(r model.Request) model.Request { return r },
			wantBody: map[string]any{"model": "cfg-model", "messages": []any{user}, "stream": true,
				"stream_options": map[string]any{"include_usage": true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
					t.Errorf("got %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
				}
				wantAuth, wantAccept := "", ""
				if tt.key != "" {
					wantAuth = "Bearer " + tt.key
				}
				if tt.stream {
					wantAccept = "text/event-stream"
				}
				for h, want := range map[string]string{"Content-Type": "application/json", "Authorization": wantAuth, "Accept": wantAccept} {
					if got := r.Header.Get(h); got != want {
						t.Errorf("%s %q, want %q", h, got, want)
					}
				}
				var body map[string]any
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					t.Errorf("decode body: %v", err)
				}
				if got, want := fmt.Sprint(body), fmt.Sprint(tt.wantBody); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
				if tt.stream {
					w.Header().Set("Content-Type", "text/event-stream")
					sse(w, contentChunk("Once"))
					sse(w, finishChunk("stop"))
					sse(w, "[DONE]")
					return
				}
				fmt.Fprint(w, completion("Once", "stop", &model.Usage{InputTokens: 12, OutputTokens: 1}))
			}))
			defer srv.Close()
			c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1/", APIKey: tt.key, Model: "cfg-model", Stream: tt.stream})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if _, err := c.Generate(context.Background(), tt.r(request())); err != nil {
				t.Fatalf("Generate: %v", err)
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
		// The flex pool's refusal, on a call that asked for no lane
		// (TestFlexRefusal holds the flex call to it).
		{429, "429_resource_unavailable.json", job.RateLimited, "http 429 resource_unavailable"},
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
	var table []modeltest.ErrorAnswer
	for _, tt := range tests {
		a := modeltest.ErrorAnswer{Name: fmt.Sprintf("%d %s", tt.status, tt.file), Status: tt.status, Class: tt.class, Detail: tt.detail,
			Header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}}}
		if tt.file != "" {
			a = modeltest.Recorded(t, a, tt.file)
		}
		table = append(table, a)
	}
	wire().RunErrors(t, table)
}

// Answers that came with a 200 but are not a generation: still billed,
// since the server may have generated them.
func TestBadSuccessfulResponses(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		write  func(w http.ResponseWriter)
		class  job.ErrorClass
		usage  model.Usage
	}{
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
			name: "finish reason content filter is billed",
			write: func(w http.ResponseWriter) {
				fmt.Fprint(w, completion("Once", "content_filter", &model.Usage{InputTokens: 12, OutputTokens: 7}))
			},
			class: job.ContentFiltered,
			usage: model.Usage{InputTokens: 12, OutputTokens: 7},
		},
		{
			name:   "stream finish reason content filter is billed",
			stream: true,
			write: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, finishChunk("content_filter"))
				sse(w, usageChunk(model.Usage{InputTokens: 9, OutputTokens: 4}))
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
			usage: model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 1, Estimated: true},
		},
		{
			// An error object of a type nobody knows, after a 200: the
			// server failed mid-answer.
			name:   "stream carries an error object",
			stream: true,
			write: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, contentChunk(" upon"))
				sse(w, errorJSON("The server had an error processing "+modeltest.Prompt, "server_error"))
			},
			class: job.ProviderError,
			usage: model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 2, Estimated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tt.write(w) }))
			defer srv.Close()
			c := wire().Client(t, srv.URL, tt.stream, nil)
			_, err := c.Generate(context.Background(), modeltest.Request())
			me := modeltest.Classified(t, err, apiKey)
			if me.Class != tt.class || me.Usage != tt.usage {
				t.Fatalf("got %q %+v, want %q %+v", me.Class, me.Usage, tt.class, tt.usage)
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
		fmt.Fprint(w, completion("Once", "stop", &model.Usage{InputTokens: 12, OutputTokens: 1}))
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
