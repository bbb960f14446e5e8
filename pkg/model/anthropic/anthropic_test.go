package anthropic_test

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
	"github.com/aijobs/aijobs/pkg/model/anthropic"
)

const (
	apiKey = "sk-ant-test-SECRET-key"
	// prompt is what must never leak into an error.
	prompt = "SECRET-PROMPT tell me a story"
	// reqID is the request-id header the fake server sends.
	reqID = "req_011CTestHeader0000000001"
)

// promptCeiling is job.PromptCeiling of the test prompt, what a call is
// billed for the prompt the server never counted: (29+1)/2 + 8.
const promptCeiling = 23

// worstCase is the bill of a non-streamed call sent whose answer was lost:
// the prompt ceiling and every token asked for, request()'s being the
// default max_tokens the client sends.
var worstCase = model.Usage{InputTokens: promptCeiling, OutputTokens: anthropic.DefaultMaxTokens, Estimated: true}

func newClient(t *testing.T, baseURL string, stream bool) *anthropic.Client {
	t.Helper()
	c, err := anthropic.New(anthropic.Config{BaseURL: baseURL, APIKey: apiKey, Model: "cfg-model", Stream: stream})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func request() model.Request {
	return model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: prompt}}}
}

// asModelError fails the test unless err is a *model.Error free of secrets
// with a short Detail.
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
	if len(me.Detail) > 100 {
		t.Fatalf("detail is %d bytes, want at most 100: %q", len(me.Detail), me.Detail)
	}
	if class, usage := model.Classify(err); class != me.Class || usage != me.Usage {
		t.Fatalf("Classify = %q %+v, want %q %+v", class, usage, me.Class, me.Usage)
	}
	return me
}

// The wire format of a streamed answer, as the Messages API sends it.
const (
	messageStart = `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`
	blockStart   = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	ping         = `{"type": "ping"}`
	blockStop    = `{"type":"content_block_stop","index":0}`
	messageStop  = `{"type":"message_stop"}`
)

func textDelta(s string) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, b)
}

func messageDelta(reason string, outputTokens int) string {
	return fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, outputTokens)
}

func errorEvent(typ, message string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, message)
}

// sse writes one server-sent event and flushes it to the client.
func sse(w http.ResponseWriter, data string) {
	var ev struct{ Type string }
	_ = json.Unmarshal([]byte(data), &ev)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
	w.(http.Flusher).Flush()
}

// streamAnswer writes a whole streamed answer of chunks.
func streamAnswer(w http.ResponseWriter, reason string, outputTokens int, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, messageStart)
	sse(w, blockStart)
	for _, c := range chunks {
		sse(w, textDelta(c))
	}
	sse(w, blockStop)
	sse(w, messageDelta(reason, outputTokens))
	sse(w, messageStop)
}

// messageJSON is a non-streamed answer; %s is its stop reason.
const messageJSON = `{
  "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "thinking", "thinking": "not part of the answer", "signature": "c2ln"},
    {"type": "text", "text": "Once upon"},
    {"type": "text", "text": " a time."}
  ],
  "stop_reason": "%s",
  "stop_sequence": null,
  "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 7,
    "service_tier": "standard"}
}`

func TestGenerateRequestAndResponse(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name     string
		cfg      anthropic.Config
		r        func(model.Request) model.Request
		wantBody map[string]any
		version  string
	}{
		{
			name:    "config model, default max tokens, no temperature",
			cfg:     anthropic.Config{APIKey: apiKey, Model: "cfg-model"},
			r:       func(r model.Request) model.Request { return r },
			version: "2023-06-01",
			wantBody: map[string]any{"model": "cfg-model", "max_tokens": 1024.0,
				"messages": []any{map[string]any{"role": "user", "content": prompt}}},
		},
		{
			name: "request model, max tokens, zero temperature is sent, system messages joined",
			cfg:  anthropic.Config{APIKey: apiKey, Model: "cfg-model", Version: "2099-01-01"},
			r: func(r model.Request) model.Request {
				r.Model, r.MaxTokens, r.Temperature = "req-model", 256, &zero
				r.Messages = []job.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: prompt},
					{Role: "assistant", Content: "Once"}, {Role: "system", Content: "no lists"}, {Role: "user", Content: "go on"}}
				return r
			},
			version: "2099-01-01",
			wantBody: map[string]any{"model": "req-model", "max_tokens": 256.0, "temperature": 0.0,
				"system": "be brief\n\nno lists",
				"messages": []any{map[string]any{"role": "user", "content": prompt},
					map[string]any{"role": "assistant", "content": "Once"},
					map[string]any{"role": "user", "content": "go on"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
					t.Errorf("got %s %s, want POST /v1/messages", r.Method, r.URL.Path)
				}
				for h, want := range map[string]string{"Content-Type": "application/json", "X-Api-Key": apiKey,
					"Anthropic-Version": tt.version, "Authorization": ""} {
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
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Request-Id", reqID)
				fmt.Fprintf(w, messageJSON, "end_turn")
			}))
			defer srv.Close()
			cfg := tt.cfg
			cfg.BaseURL = srv.URL + "/"
			c, err := anthropic.New(cfg)
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
			want := model.Response{Output: "Once upon a time.", Model: "claude-sonnet-4-5-20250929", FinishReason: "end_turn",
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

func TestGenerateUsage(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		usage model.Usage
	}{
		{
			name: "cached prompt tokens are input",
			body: `{"type":"message","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",
				"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":2}}`,
			usage: model.Usage{InputTokens: 1103, OutputTokens: 2},
		},
		{
			// A compatible proxy that drops usage: an upper estimate, the
			// prompt ceiling and the text at two bytes a token.
			name:  "no usage is estimated",
			body:  `{"type":"message","model":"m","content":[{"type":"text","text":"0123456789"}],"stop_reason":"max_tokens"}`,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 5, Estimated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tt.body) }))
			defer srv.Close()
			resp, err := newClient(t, srv.URL, false).Generate(context.Background(), request())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if resp.Usage != tt.usage {
				t.Fatalf("usage %+v, want %+v", resp.Usage, tt.usage)
			}
		})
	}
}

func TestGenerateStream(t *testing.T) {
	tests := []struct {
		name     string
		final    int // message_delta's output_tokens; -1: no usage in message_delta
		usage    model.Usage
		progress string
	}{
		{name: "server count replaces the delta count", final: 12,
			usage: model.Usage{InputTokens: 25, OutputTokens: 12}, progress: "[1 2 3 12]"},
		{name: "progress never goes backwards", final: 2,
			usage: model.Usage{InputTokens: 25, OutputTokens: 2}, progress: "[1 2 3]"},
		// A proxy that drops the final count: the deltas, estimated.
		{name: "no final count is estimated", final: -1,
			usage: model.Usage{InputTokens: 25, OutputTokens: 3, Estimated: true}, progress: "[1 2 3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			progressed := make(chan int, 8)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct {
					Stream *bool `json:"stream"`
				}
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					t.Errorf("decode body: %v", err)
				}
				if body.Stream == nil || !*body.Stream {
					t.Errorf("stream request lacks stream:true")
				}
				if got := r.Header.Get("Accept"); got != "text/event-stream" {
					t.Errorf("Accept %q", got)
				}
				w.Header().Set("Content-Type", "text/event-stream")
				sse(w, messageStart)
				sse(w, blockStart)
				sse(w, ping)
				fmt.Fprint(w, ": a comment\n\n")
				for _, s := range []string{"Once", " upon", " a time."} {
					sse(w, textDelta(s))
					// The client reports each delta before the next is
					// sent: progress is live, not computed at the end.
					select {
					case <-progressed:
					case <-time.After(5 * time.Second):
						t.Errorf("no progress reported for delta %q while streaming", s)
					}
				}
				sse(w, blockStop)
				if tt.final < 0 {
					sse(w, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`)
				} else {
					sse(w, messageDelta("end_turn", tt.final))
				}
				sse(w, messageStop)
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
			want := model.Response{Output: "Once upon a time.", Model: "claude-sonnet-4-5-20250929", FinishReason: "end_turn",
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

// An event's data may span several data: lines, and CRLF ends lines as
// well as LF.
func TestStreamFraming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "event: message_start\r\ndata: "+messageStart+"\r\n\r\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\ndata: \"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n")
		fmt.Fprint(w, "event: message_delta\ndata:"+messageDelta("end_turn", 1)+"\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: "+messageStop+"\n\n")
	}))
	defer srv.Close()
	resp, err := newClient(t, srv.URL, true).Generate(context.Background(), request())
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
					fmt.Fprintf(w, messageJSON, tt.reason)
				}))
				defer srv.Close()
				resp, err := newClient(t, srv.URL, stream).Generate(context.Background(), request())
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
				if tt.header != "" {
					w.Header().Set("Request-Id", tt.header)
				}
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
				sse(w, messageStart)
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
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				sse(w, errorEvent("rate_limit_error", "Rate limited"))
			},
			class: job.RateLimited, detail: "stream rate_limit_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
		{
			name: "unknown error type mid answer, message quoting the prompt",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				sse(w, textDelta(" upon"))
				sse(w, textDelta(" a"))
				sse(w, errorEvent("mystery_error", "could not continue "+prompt))
			},
			class: job.ProviderError, detail: "stream mystery_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 3, Estimated: true},
		},
		{
			name: "error after the final count",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				sse(w, messageDelta("end_turn", 9))
				sse(w, errorEvent("api_error", "Internal server error"))
			},
			class: job.ProviderError, detail: "stream api_error " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 9}, // the final count arrived
		},
		{
			name:  "error before message_start is estimated",
			write: func(w http.ResponseWriter) { sse(w, errorEvent("overloaded_error", "Overloaded")) },
			class: job.Overloaded, detail: "stream overloaded_error " + reqID,
			usage: model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name: "event is not JSON",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				fmt.Fprint(w, "event: content_block_delta\ndata: {not json\n\n")
			},
			class: job.ProviderError, detail: "anthropic: unparseable stream event " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
		{
			name: "event larger than the 1 MiB line limit",
			write: func(w http.ResponseWriter) {
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				sse(w, textDelta(strings.Repeat("x", 1<<20)))
			},
			class: job.ProviderError, detail: "anthropic: stream event too large " + reqID,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Request-Id", reqID)
				tt.write(w)
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, true).Generate(context.Background(), request())
			me := asModelError(t, err, "could not continue")
			if me.Class != tt.class || me.Detail != tt.detail || me.Usage != tt.usage {
				t.Fatalf("got %q %q %+v\nwant %q %q %+v", me.Class, me.Detail, me.Usage, tt.class, tt.detail, tt.usage)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests, want exactly 1 (no retries)", n)
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
		{name: "body is not JSON", body: "<html>hello</html>", class: job.ProviderError},
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
			_, err := newClient(t, srv.URL, false).Generate(context.Background(), request())
			me := asModelError(t, err)
			// The server answered 200: it may have generated all it was
			// asked, and said nothing of it.
			if me.Class != tt.class || me.Usage != worstCase {
				t.Fatalf("got %q %+v, want %q with the worst case %+v", me.Class, me.Usage, tt.class, worstCase)
			}
		})
	}
}

func TestCancelClosesStream(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse(w, messageStart)
		sse(w, textDelta("Once"))
		sse(w, textDelta(" upon"))
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
	start := time.Now()
	_, err := newClient(t, srv.URL, true).Generate(ctx, r)
	me := asModelError(t, err)
	if me.Class != job.Cancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("class %q, want cancelled (%v)", me.Class, err)
	}
	// Money spent on a cancelled stream is still spent.
	if me.Usage != (model.Usage{InputTokens: 25, OutputTokens: 2, Estimated: true}) {
		t.Fatalf("usage %+v, want the two deltas received billed", me.Usage)
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("server never saw the client go away")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("closing the stream took %v", d)
	}
}

// An answer lost after the request was sent is billed: a non-streamed
// one at the worst case (the server finishes the generation and bills
// it), a stream at what it told before the cut, estimated unless its
// final count arrived.
func TestConnectionDrops(t *testing.T) {
	reset := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with a RST
		_ = conn.Close()
	}
	tests := []struct {
		name   string
		stream bool
		write  func(w http.ResponseWriter, r *http.Request)
		usage  model.Usage
	}{
		{
			name:  "reset after the request, before the headers",
			write: reset,
			usage: worstCase,
		},
		{
			name:   "stream reset after the request, before the headers",
			stream: true,
			write:  reset,
			usage:  model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name:   "stream after the headers, before the first event",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			usage: model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name:   "mid stream",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				sse(w, textDelta(" upon"))
				panic(http.ErrAbortHandler)
			},
			usage: model.Usage{InputTokens: 25, OutputTokens: 2, Estimated: true},
		},
		{
			name:   "stream ends after message_delta without message_stop",
			stream: true,
			write: func(w http.ResponseWriter, r *http.Request) {
				sse(w, messageStart)
				sse(w, textDelta("Once"))
				sse(w, messageDelta("end_turn", 6))
			},
			usage: model.Usage{InputTokens: 25, OutputTokens: 6}, // the final count arrived
		},
		{
			name:   "stream ends after message_start",
			stream: true,
			write:  func(w http.ResponseWriter, r *http.Request) { sse(w, messageStart) },
			usage:  model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true},
		},
		{
			name: "mid body",
			write: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1000")
				fmt.Fprint(w, `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","content":[`)
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
				w.Header().Set("Content-Type", "text/event-stream")
				tt.write(w, r)
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, tt.stream).Generate(context.Background(), request())
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
	refused := "http://" + l.Addr().String()
	_ = l.Close()
	var requests atomic.Int32
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	for _, stream := range []bool{false, true} {
		for name, url := range map[string]string{"connection refused": refused, "TLS certificate not trusted": tlsSrv.URL} {
			_, err = newClient(t, url, stream).Generate(context.Background(), request())
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
		deadline time.Duration  // on the call's context; 0: none
		cancel   time.Duration  // cancel the call's context after this; 0: never
		max      int            // the request's max_tokens; 0: the default
		client   anthropic.Doer // nil: the default client
		stream   bool
		class    job.ErrorClass
		target   error // what the error must wrap, if anything
		usage    model.Usage
	}{
		{name: "call deadline before headers", deadline: 50 * time.Millisecond, class: job.Timeout, target: context.DeadlineExceeded,
			usage: worstCase},
		{name: "call deadline before headers, max_tokens asked", deadline: 50 * time.Millisecond, max: 300, class: job.Timeout,
			target: context.DeadlineExceeded, usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 300, Estimated: true}},
		{name: "call deadline before stream headers", deadline: 50 * time.Millisecond, stream: true, class: job.Timeout,
			target: context.DeadlineExceeded, usage: model.Usage{InputTokens: promptCeiling, Estimated: true}},
		{name: "call deadline mid stream", deadline: 300 * time.Millisecond, stream: true, class: job.Timeout, target: context.DeadlineExceeded,
			usage: model.Usage{InputTokens: 25, OutputTokens: 1, Estimated: true}},
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
					sse(w, messageStart)
					sse(w, textDelta("Once"))
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
			c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: apiKey, Stream: tt.stream, HTTPClient: tt.client})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			r := request()
			r.MaxTokens = tt.max
			start := time.Now()
			_, err = c.Generate(ctx, r)
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

// A redirect is never followed: a 307 would re-send the POST, a second
// billed call.
func TestRedirectNotFollowed(t *testing.T) {
	var first, followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		first.Add(1)
		http.Redirect(w, r, "/elsewhere/v1/messages", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/elsewhere/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		fmt.Fprintf(w, messageJSON, "end_turn")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		_, err := newClient(t, srv.URL, stream).Generate(context.Background(), request())
		me := asModelError(t, err)
		if me.Class != job.Internal || me.Detail != "http 307" {
			t.Fatalf("class %q detail %q, want internal http 307", me.Class, me.Detail)
		}
	}
	if first.Load() != 2 || followed.Load() != 0 {
		t.Fatalf("%d requests, %d followed redirects; want 2 and 0", first.Load(), followed.Load())
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
		fmt.Fprintf(w, messageJSON, "end_turn")
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
