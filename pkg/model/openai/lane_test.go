package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// Lanes: a flex or priority call names its service tier on both wires; a
// standard one sends none; and a flex call's 429 Resource Unavailable is
// the flex pool's refusal (OpenAI, "Flex processing": not billed), while
// any other 429, a bodiless one included, is the key's rate limit.

// The bodies a standard call sends, byte for byte: no service_tier, and
// the cap in max_completion_tokens, the field every OpenAI model takes.
const (
	chatBody   = `{"model":"cfg-model","messages":[{"role":"user","content":"SECRET-PROMPT tell me a story"}],"max_completion_tokens":300}`
	streamBody = `{"model":"cfg-model","messages":[{"role":"user","content":"SECRET-PROMPT tell me a story"}],"max_completion_tokens":300,` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	createBody = `{"model":"cfg-model","input":[{"role":"user","content":"SECRET-PROMPT tell me a story"}],"max_output_tokens":300,` +
		`"background":true,"store":true}`
)

// wireMode is one of the client's two wires, chat completions streamed or
// not, or the Responses API's background create.
type wireMode struct {
	name       string
	stream     bool
	background bool
	standard   string // the body of a standard call
}

var wireModes = []wireMode{
	{name: "chat", standard: chatBody},
	{name: "chat stream", stream: true, standard: streamBody},
	{name: "responses", background: true, standard: createBody},
}

// client is a client of the server at url speaking m's wire.
func (m wireMode) client(t *testing.T, url string) model.Provider {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: url, APIKey: apiKey, Model: "cfg-model", Stream: m.stream,
		Background: m.background, PollEvery: pollEvery})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// answer writes a whole successful answer in m's wire.
func (m wireMode) answer(w http.ResponseWriter) {
	u := model.Usage{InputTokens: 12, OutputTokens: 1}
	switch {
	case m.background:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, completed(u, "Once"))
	case m.stream:
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, contentChunk("Once"))
		sse(w, finishChunk("stop"))
		sse(w, usageChunk(u))
		sse(w, "[DONE]")
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, completion("Once", "stop", &u))
	}
}

func TestServiceTier(t *testing.T) {
	for _, m := range wireModes {
		for _, lane := range []job.Lane{"", job.Standard, job.Flex, job.Priority} {
			t.Run(fmt.Sprintf("%s lane %q", m.name, lane), func(t *testing.T) {
				var mu sync.Mutex
				var sent []byte
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					mu.Lock()
					sent = b
					mu.Unlock()
					m.answer(w)
				}))
				defer srv.Close()
				r := modeltest.Request()
				r.Lane = lane
				if _, err := m.client(t, srv.URL).Generate(context.Background(), r); err != nil {
					t.Fatalf("Generate: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if lane == "" || lane == job.Standard {
					if string(sent) != m.standard {
						t.Fatalf("body\n got %s\nwant %s", sent, m.standard)
					}
					return
				}
				var got, want map[string]any
				if err := json.Unmarshal(sent, &got); err != nil {
					t.Fatalf("decode body: %v", err)
				}
				_ = json.Unmarshal([]byte(m.standard), &want)
				want["service_tier"] = string(lane)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("body %v, want %v", got, want)
				}
			})
		}
	}
}

// fixture is the body recorded in testdata/errors/file, and its message,
// which no error may show.
func fixture(t *testing.T, file string) (body, message string) {
	t.Helper()
	if file == "" {
		return "", ""
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "errors", file))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var b struct{ Error struct{ Message string } }
	_ = json.Unmarshal(raw, &b)
	return string(raw), b.Error.Message
}

func TestFlexRefusal(t *testing.T) {
	tests := []struct {
		name   string
		status int
		file   string // under testdata/errors; "" for an empty body
		lane   job.Lane
		class  job.ErrorClass
		detail string
	}{
		{"flex, resource unavailable", 429, "429_resource_unavailable.json", job.Flex, job.CapacityUnavailable, "http 429 resource_unavailable"},
		{"flex, a 429 naming nothing", 429, "", job.Flex, job.RateLimited, "http 429"},
		{"flex, resource unavailable by its words", 429, "429_resource_unavailable_words.json", job.Flex, job.CapacityUnavailable, "http 429"},
		{"flex, the key's rate limit", 429, "429_rate_limit.json", job.Flex, job.RateLimited, "http 429 rate_limit_exceeded tokens"},
		{"flex, a spent quota", 429, "429_insufficient_quota.json", job.Flex, job.QuotaExhausted, "http 429 insufficient_quota insufficient_quota"},
		{"flex, a spend limit", 429, "429_spend_limit.json", job.Flex, job.QuotaExhausted, "http 429 enforced_spend_limit_reached insufficient_quota"},
		{"flex, overloaded", 503, "503.json", job.Flex, job.Overloaded, "http 503 server_error"},
		{"standard, resource unavailable", 429, "429_resource_unavailable.json", job.Standard, job.RateLimited, "http 429 resource_unavailable"},
		{"no lane, resource unavailable", 429, "429_resource_unavailable.json", "", job.RateLimited, "http 429 resource_unavailable"},
		{"priority, resource unavailable", 429, "429_resource_unavailable.json", job.Priority, job.RateLimited, "http 429 resource_unavailable"},
		{"priority, a 429 naming nothing", 429, "", job.Priority, job.RateLimited, "http 429"},
	}
	for _, tt := range tests {
		for _, m := range wireModes {
			t.Run(tt.name+" "+m.name, func(t *testing.T) {
				body, message := fixture(t, tt.file)
				var secrets []string
				if message != "" {
					secrets = []string{message, message[:len(message)/2]}
				}
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Retry-After", "7")
					w.WriteHeader(tt.status)
					fmt.Fprint(w, body)
				}))
				defer srv.Close()
				r := modeltest.Request()
				r.Lane = tt.lane
				_, err := m.client(t, srv.URL).Generate(context.Background(), r)
				me := modeltest.Classified(t, err, append(secrets, apiKey)...)
				if me.Class != tt.class || me.Detail != tt.detail {
					t.Fatalf("class %q detail %q, want %q %q (%v)", me.Class, me.Detail, tt.class, tt.detail, err)
				}
				if me.Usage != (model.Usage{}) {
					t.Fatalf("usage %+v: a refusal is not billed", me.Usage)
				}
				// The flex pool's retry-after is no word on the key: the
				// worker moves to a faster lane on the same key.
				if wantPause := tt.class != job.CapacityUnavailable; (me.Pause > 0) != wantPause {
					t.Fatalf("pause %v, want one: %v", me.Pause, wantPause)
				}
			})
		}
	}
}

// A poll reads what the server took already: its 429 is the key's limit,
// even for a flex generation.
func TestFlexPollRateLimited(t *testing.T) {
	busy := answer{http.StatusTooManyRequests, errorJSON("slow down", "requests"), nil}
	f := serveResponses(t, ok(object("queued", "")), busy)
	c, r := f.client(t)
	r.Lane = job.Flex
	_, err := c.Generate(context.Background(), r)
	if me := modeltest.Classified(t, err, apiKey); me.Class != job.RateLimited || me.Usage != worstCase {
		t.Fatalf("got %q %+v, want rate_limited %+v", me.Class, me.Usage, worstCase)
	}
	if got := f.body()["service_tier"]; got != "flex" {
		t.Fatalf("create's service_tier %v, want flex", got)
	}
}
