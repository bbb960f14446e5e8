package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// The transport's contract (one request, no redirect, what a lost or cut
// answer is billed, timeouts) is the conformance suite's (wire_test.go);
// this file holds what is Anthropic's own: the request it sends, its stop
// reasons, error bodies and events, its odd answers.

// TestConformance holds the provider to the contract every provider keeps
// (pkg/model/modeltest), over this wire format.
func TestConformance(t *testing.T) { modeltest.RunHTTP(t, wire()) }

// worstCase is the bill of a non-streamed call sent whose answer was lost:
// the prompt ceiling and every token asked for, request()'s being the
// default max_tokens the client sends.
var worstCase = model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: anthropic.DefaultMaxTokens, Estimated: true}

// request is a generation that leaves every option to the defaults.
var request = modeltest.Bare

// clientAt is the provider against url with the test key.
func clientAt(t *testing.T, url string, stream bool) model.Provider {
	return wire().Client(t, url, stream, nil)
}

// asModelError fails the test unless err is a classified, secret-free
// *model.Error (modeltest.Classified).
func asModelError(t *testing.T, err error, secrets ...string) *model.Error {
	t.Helper()
	return modeltest.Classified(t, err, append(secrets, apiKey)...)
}

func TestGenerateRequest(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name     string
		cfg      anthropic.Config
		r        func(model.Request) model.Request
		wantBody map[string]any
		version  string
		accept   string
	}{
		{
			name:    "config model, default max tokens, no temperature",
			cfg:     anthropic.Config{APIKey: apiKey, Model: "cfg-model"},
			r:       func(r model.Request) model.Request { return r },
			version: "2023-06-01",
			wantBody: map[string]any{"model": "cfg-model", "max_tokens": 1024.0,
				"messages": []any{map[string]any{"role": "user", "content": modeltest.Prompt}}},
		},
		{
			name: "request model, max tokens, zero temperature is sent, system messages joined",
			cfg:  anthropic.Config{APIKey: apiKey, Model: "cfg-model", Version: "2099-01-01"},
			r: func(r model.Request) model.Request {
				r.Model, r.MaxTokens, r.Temperature = "req-model", 256, &zero
				r.Messages = []job.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: modeltest.Prompt},
					{Role: "assistant", Content: "Once"}, {Role: "system", Content: "no lists"}, {Role: "user", Content: "go on"}}
				return r
			},
			version: "2099-01-01",
			wantBody: map[string]any{"model": "req-model", "max_tokens": 256.0, "temperature": 0.0,
				"system": "be brief\n\nno lists",
				"messages": []any{map[string]any{"role": "user", "content": modeltest.Prompt},
					map[string]any{"role": "assistant", "content": "Once"},
					map[string]any{"role": "user", "content": "go on"}}},
		},
		{
			name:    "a stream asks for events",
			cfg:     anthropic.Config{APIKey: apiKey, Model: "cfg-model", Stream: true},
			r:       func(r model.Request) model.Request { return r },
			version: "2023-06-01",
			accept:  "text/event-stream",
			wantBody: map[string]any{"model": "cfg-model", "max_tokens": 1024.0, "stream": true,
				"messages": []any{map[string]any{"role": "user", "content": modeltest.Prompt}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
					t.Errorf("got %s %s, want POST /v1/messages", r.Method, r.URL.Path)
				}
				for h, want := range map[string]string{"Content-Type": "application/json", "X-Api-Key": apiKey,
					"Anthropic-Version": tt.version, "Authorization": "", "Accept": tt.accept} {
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
				if tt.cfg.Stream {
					streamAnswer(w, "end_turn", 7, "Once upon", " a time.")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, message("end_turn", &model.Usage{InputTokens: 12, OutputTokens: 7}, "Once upon", " a time."))
			}))
			defer srv.Close()
			cfg := tt.cfg
			cfg.BaseURL = srv.URL + "/"
			c, err := anthropic.New(cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if _, err := c.Generate(context.Background(), tt.r(request())); err != nil {
				t.Fatalf("Generate: %v", err)
			}
		})
	}
}

// Cached prompt tokens are reported apart from input_tokens; they were
// read all the same, and are named apart so they are priced at their rates.
func TestCachedTokensAreInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"type":"message","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",
			"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":2}}`)
	}))
	defer srv.Close()
	resp, err := clientAt(t, srv.URL, false).Generate(context.Background(), request())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if want := (model.Usage{InputTokens: 1103, OutputTokens: 2, CachedInputTokens: 1000, CacheWriteTokens: 100}); resp.Usage != want {
		t.Fatalf("usage %+v, want %+v", resp.Usage, want)
	}
}

// The Messages API requires max_tokens: a request without one is sent the
// default, and a lost answer is billed it (docs/errors.md).
func TestDefaultMaxTokensIsBilled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := clientAt(t, srv.URL, false).Generate(ctx, request())
	me := asModelError(t, err)
	if me.Class != job.Timeout || !errors.Is(err, context.DeadlineExceeded) || me.Usage != worstCase {
		t.Fatalf("got %q %+v (%v), want a timeout billed %+v", me.Class, me.Usage, err, worstCase)
	}
}

// An event's data may span several data: lines, and CRLF ends lines as
// well as LF.
func TestStreamFraming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "event: message_start\r\ndata: "+messageStart(25)+"\r\n\r\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\ndata: \"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n")
		fmt.Fprint(w, "event: message_delta\ndata:"+messageDelta("end_turn", 1)+"\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: "+messageStop+"\n\n")
	}))
	defer srv.Close()
	resp, err := clientAt(t, srv.URL, true).Generate(context.Background(), request())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Output != "Hi" || resp.Usage != (model.Usage{InputTokens: 25, OutputTokens: 1}) {
		t.Fatalf("got %+v", resp)
	}
}

func TestStopReasons(t *testing.T) {
	tests := []struct {
		reason string
		class  job.ErrorClass // "" for a success
	}{
		{reason: "end_turn"},
		{reason: "stop_sequence"},
		{reason: "max_tokens"},
		{reason: "tool_use"},
		{reason: "refusal", class: job.ContentFiltered},
		{reason: "model_context_window_exceeded", class: job.ContextLengthExceeded},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.reason, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Request-Id", reqID)
					if stream {
						streamAnswer(w, tt.reason, 7, "Once upon", " a time.")
						return
					}
					fmt.Fprint(w, message(tt.reason, &model.Usage{InputTokens: 12, OutputTokens: 7}, "Once upon", " a time."))
				}))
				defer srv.Close()
				resp, err := clientAt(t, srv.URL, stream).Generate(context.Background(), request())
				input := int64(12)
				if stream {
					input = 25
				}
				billed := model.Usage{InputTokens: input, OutputTokens: 7}
				if tt.class == "" {
					if err != nil {
						t.Fatalf("Generate: %v", err)
					}
					if resp.FinishReason != tt.reason || resp.Output != "Once upon a time." || resp.Usage != billed {
						t.Fatalf("got %+v", resp)
					}
					return
				}
				me := asModelError(t, err)
				// The answer was generated, so it is paid for.
				if me.Class != tt.class || me.Usage != billed {
					t.Fatalf("got %q %+v, want %q %+v", me.Class, me.Usage, tt.class, billed)
				}
				if want := "stop_reason " + tt.reason + " " + reqID; me.Detail != want {
					t.Fatalf("detail %q, want %q", me.Detail, want)
				}
			})
		}
	}
}

func TestErrorBodies(t *testing.T) {
	tests := []struct {
		status int
		file   string // under testdata/errors; "" for an empty body
		header string // the request-id header, if any
		class  job.ErrorClass
		detail string
	}{
		{400, "400_invalid.json", "", job.InvalidRequest, "http 400 invalid_request_error req_011CSHoEeqs5C35K2UUqR7Fy"},
		{400, "400_prompt_too_long.json", "", job.ContextLengthExceeded, "http 400 invalid_request_error prompt_too_long req_011CVjxiYzEFcAQC4Fk87zw2"},
		{400, "400_context_limit.json", "", job.ContextLengthExceeded, "http 400 invalid_request_error prompt_too_long req_011CWdepJvA2D819tdYYq4h7"},
		{400, "400_spend_limit.json", "", job.QuotaExhausted, "http 400 invalid_request_error spend_limit req_011CbrFTcXhtiMzr3s6EocF7"},
		{400, "400_workspace_spend_limit.json", "", job.QuotaExhausted, "http 400 invalid_request_error spend_limit"},
		{400, "400_credit_balance.json", "", job.QuotaExhausted, "http 400 invalid_request_error credit_balance req_011CeGphKfhi1XAd3tJp1z1E"},
		// A Claude 4 model's refusal of temperature with top_p (the fake's
		// refusal; anthropictest.refusal cites the reports).
		{400, "400_temperature_top_p.json", "", job.InvalidRequest, "http 400 invalid_request_error req_011CTfrnTsra8hsUuM24BzEC"},
		{401, "401.json", "", job.Auth, "http 401 authentication_error req_011CSHoEeqs5C35K2UUqR7Fz"},
		{402, "402.json", "", job.QuotaExhausted, "http 402 billing_error req_011CSHoEeqs5C35K2UUqR7G0"},
		{403, "403.json", "", job.Auth, "http 403 permission_error req_011CSHoEeqs5C35K2UUqR7G1"},
		{404, "404.json", "", job.InvalidRequest, "http 404 not_found_error req_011CSHoEeqs5C35K2UUqR7G2"},
		{409, "409.json", "", job.InvalidRequest, "http 409 conflict_error req_011CSHoEeqs5C35K2UUqR7G3"},
		{413, "413.json", "", job.InvalidRequest, "http 413 request_too_large"},
		{429, "429_rate_limit.json", "", job.RateLimited, "http 429 rate_limit_error req_011CSHoEeqs5C35K2UUqR7G4"},
		{429, "429_spend_limit.json", "", job.QuotaExhausted, "http 429 rate_limit_error enforced_spend_limit_reached req_018EeWyXxfu5pfWkrYcMdjWG"},
		{429, "429_spend_limit_message.json", "", job.QuotaExhausted, "http 429 rate_limit_error spend_limit req_011CSHoEeqs5C35K2UUqR7G5"},
		{429, "", "", job.RateLimited, "http 429"},
		// The header wins over the body's copy.
		{500, "500.json", reqID, job.ProviderError, "http 500 api_error " + reqID},
		{502, "502.html", "", job.ProviderError, "http 502"},
		{503, "503.json", "", job.Overloaded, "http 503 api_error req_011CSHoEeqs5C35K2UUqR7G7"},
		{504, "504.json", "", job.ProviderError, "http 504 timeout_error req_011CSHoEeqs5C35K2UUqR7G8"},
		{529, "529.json", "", job.Overloaded, "http 529 overloaded_error req_011CSHoEeqs5C35K2UUqR7G9"},
		{418, "418_unknown.json", "", job.Internal, "http 418"},
		{418, "", "not a token!", job.Internal, "http 418"},
	}
	var table []modeltest.ErrorAnswer
	for _, tt := range tests {
		a := modeltest.ErrorAnswer{Name: fmt.Sprintf("%d %s", tt.status, tt.file), Status: tt.status, Class: tt.class, Detail: tt.detail,
			Header: http.Header{"Content-Type": {"application/json"}}}
		if tt.header != "" {
			a.Header.Set("Request-Id", tt.header)
		}
		if tt.file != "" {
			a = modeltest.Recorded(t, a, tt.file)
		}
		table = append(table, a)
	}
	wire().RunErrors(t, table)
}

// A quota class is never retried: the worker must not spend attempts on a
// spend limit.
func TestQuotaIsFinal(t *testing.T) {
	if job.QuotaExhausted.Retryable() {
		t.Fatal("quota_exhausted is retryable")
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name   string
		write  func(w http.ResponseWriter)
		class  job.ErrorClass
		detail string
		usage  model.Usage
	}{
		{
			name: "overloaded mid answer",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart(25))
				sse(w, blockStart)
				sse(w, textDelta("Once"))
				sse(w, textDelta(" upon"))
				sse(w, errorEvent("overloaded_error", "Overloaded"))
			},
			class: job.Overloaded, detail: "stream overloaded_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 2, Estimated: true},
		},
		{
			name: "rate limited mid answer",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart(25))
				sse(w, textDelta("Once"))
				sse(w, errorEvent("rate_limit_error", "Rate limited"))
			},
			class: job.RateLimited, detail: "stream rate_limit_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
		{
			name: "unknown error type mid answer, message quoting the prompt",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart(25))
				sse(w, textDelta("Once"))
				sse(w, textDelta(" upon"))
				sse(w, textDelta(" a"))
				sse(w, errorEvent("mystery_error", "could not continue "+modeltest.Prompt))
			},
			class: job.ProviderError, detail: "stream mystery_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 3, Estimated: true},
		},
		{
			name: "error after the final count",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart(25))
				sse(w, textDelta("Once"))
				sse(w, messageDelta("end_turn", 9))
				sse(w, errorEvent("api_error", "Internal server error"))
			},
			class: job.ProviderError, detail: "stream api_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 9}, // the final count arrived
		},
		{
			// message_start counts the prompt and one output token.
			name:  "stream ends after message_start",
			write: func(w http.ResponseWriter) { sse(w, messageStart(25)) },
			class: job.Network, detail: "anthropic: connection cut " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
		{
			name:  "error before message_start is estimated",
			write: func(w http.ResponseWriter) { sse(w, errorEvent("overloaded_error", "Overloaded")) },
			class: job.Overloaded, detail: "stream overloaded_error " + reqID,
			usage: model.Usage{InputTokens: modeltest.PromptCeiling, Estimated: true},
		},
		{
			name: "event is not JSON",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart(25))
				sse(w, textDelta("Once"))
				fmt.Fprint(w, "event: content_block_delta\ndata: {not json\n\n")
			},
			class: job.ProviderError, detail: "anthropic: unparseable stream event " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
		{
			name: "event larger than the 1 MiB line limit",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart(25))
				sse(w, textDelta("Once"))
				sse(w, textDelta(strings.Repeat("x", 1<<20)))
			},
			class: job.ProviderError, detail: "anthropic: stream event too large " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Request-Id", reqID)
				tt.write(w)
			}))
			defer srv.Close()
			_, err := clientAt(t, srv.URL, true).Generate(context.Background(), request())
			me := asModelError(t, err, "could not continue")
			if me.Class != tt.class || me.Detail != tt.detail || me.Usage != tt.usage {
				t.Fatalf("got %q %q %+v\nwant %q %q %+v", me.Class, me.Detail, me.Usage, tt.class, tt.detail, tt.usage)
			}
		})
	}
}

func TestBadSuccessfulResponses(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		class job.ErrorClass
	}{
		{name: "not a message", body: `{"type":"completion","completion":"hi"}`, class: job.ProviderError},
		{name: "error body with a 200", body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			class: job.Overloaded},
		{name: "unknown error body with a 200", body: `{"type":"error","error":{"type":"odd_error","message":"odd"}}`,
			class: job.ProviderError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tt.body) }))
			defer srv.Close()
			_, err := clientAt(t, srv.URL, false).Generate(context.Background(), request())
			me := asModelError(t, err)
			// The server answered 200: it may have generated all it was
			// asked, and said nothing of it.
			if me.Class != tt.class || me.Usage != worstCase {
				t.Fatalf("got %q %+v, want %q with the worst case %+v", me.Class, me.Usage, tt.class, worstCase)
			}
		})
	}
}

// doerFunc is a Doer that never touches the network.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

func TestNew(t *testing.T) {
	for _, bad := range []string{"api.anthropic.com", "ftp://api.anthropic.com", "http://", "://x"} {
		if _, err := anthropic.New(anthropic.Config{BaseURL: bad}); err == nil {
			t.Errorf("New accepted base URL %q", bad)
		}
	}
	var got *http.Request
	c, err := anthropic.New(anthropic.Config{Model: "m", HTTPClient: doerFunc(func(r *http.Request) (*http.Response, error) {
		got = r
		return nil, errors.New("offline")
	})})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var _ model.Provider = c
	_, err = c.Generate(context.Background(), request())
	if me := asModelError(t, err); me.Class != job.Network {
		t.Fatalf("class %q, want network", me.Class)
	}
	if got.URL.String() != "https://api.anthropic.com/v1/messages" || got.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("defaults: %s %q", got.URL, got.Header.Get("Anthropic-Version"))
	}
	if got.Header.Get("X-Api-Key") != "" {
		t.Fatal("sent a key nobody configured")
	}
}

// The package must not read its configuration from the environment: main
// does, so one process can hold differently configured clients.
func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Api-Key"); got != "" {
			t.Errorf("x-api-key %q, want none", got)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, message("end_turn", &model.Usage{InputTokens: 12, OutputTokens: 7}, "Once upon", " a time."))
	}))
	defer srv.Close()
	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := c.Generate(context.Background(), request()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
}
