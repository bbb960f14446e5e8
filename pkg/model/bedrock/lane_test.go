package bedrock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// Lanes: a flex or priority call names its service tier in the body; a
// standard one sends the body it always sent; and a flex call Bedrock
// answers ServiceUnavailableException is the flex pool's refusal.

// standardBody is the body of a standard call of request(), byte for byte.
const standardBody = `{"messages":[{"content":[{"text":"SECRET-PROMPT tell me a story"}],"role":"user"}]}`

func TestServiceTier(t *testing.T) {
	tests := []struct {
		lane job.Lane
		want string // the body, keys sorted
	}{
		{"", standardBody},
		{job.Standard, standardBody},
		{job.Flex, `{"messages":[{"content":[{"text":"SECRET-PROMPT tell me a story"}],"role":"user"}],"serviceTier":{"type":"flex"}}`},
		{job.Priority, `{"messages":[{"content":[{"text":"SECRET-PROMPT tell me a story"}],"role":"user"}],"serviceTier":{"type":"priority"}}`},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("lane %q stream=%v", tt.lane, stream), func(t *testing.T) {
				var mu sync.Mutex
				var sent []byte
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					mu.Lock()
					sent = b
					mu.Unlock()
					if stream {
						startStream(w).answer("end_turn", 12, 7, "Once")
						return
					}
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, converseJSON("Once", "end_turn", 12, 7))
				}))
				defer srv.Close()
				r := request()
				r.Lane = tt.lane
				if _, err := newClient(t, srv.URL, stream).Generate(context.Background(), r); err != nil {
					t.Fatalf("Generate: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if tt.want == standardBody && string(sent) != standardBody {
					t.Fatalf("body\n got %s\nwant %s, as before lanes", sent, standardBody)
				}
				var body any
				if err := json.Unmarshal(sent, &body); err != nil {
					t.Fatalf("decode body: %v", err)
				}
				if got, _ := json.Marshal(body); string(got) != tt.want {
					t.Fatalf("body\n got %s\nwant %s", got, tt.want)
				}
			})
		}
	}
}

func TestFlexRefusal(t *testing.T) {
	tests := []struct {
		file   string // under testdata/errors
		lane   job.Lane
		class  job.ErrorClass
		detail string
	}{
		{"503_ServiceUnavailableException.http", job.Flex, job.CapacityUnavailable, "http 503 ServiceUnavailableException"},
		{"503_ServiceUnavailableException.http", job.Standard, job.Overloaded, "http 503 ServiceUnavailableException"},
		{"503_ServiceUnavailableException.http", "", job.Overloaded, "http 503 ServiceUnavailableException"},
		{"503_ServiceUnavailableException.http", job.Priority, job.Overloaded, "http 503 ServiceUnavailableException"},
		// Only that exception is the pool's refusal: the key's throttling
		// and a model still loading keep their classes on a flex call.
		{"429_ThrottlingException.http", job.Flex, job.RateLimited, "http 429 ThrottlingException"},
		{"429_ModelNotReadyException.http", job.Flex, job.Overloaded, "http 429 ModelNotReadyException"},
		{"500_InternalServerException.http", job.Flex, job.ProviderError, "http 500 InternalServerException"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s lane %q stream=%v", tt.file, tt.lane, stream), func(t *testing.T) {
				a := modeltest.Recorded(t, modeltest.ErrorAnswer{}, tt.file)
				var requests atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					requests.Add(1)
					_, _ = io.Copy(io.Discard, r.Body)
					for k, v := range a.Header {
						w.Header()[k] = v
					}
					w.WriteHeader(a.Status)
					_, _ = w.Write(a.Body)
				}))
				defer srv.Close()
				r := request()
				r.Lane = tt.lane
				_, err := newClient(t, srv.URL, stream).Generate(context.Background(), r)
				me := asModelError(t, err, a.Message, a.Message[:len(a.Message)/2])
				if me.Class != tt.class || me.Detail != tt.detail {
					t.Fatalf("class %q detail %q, want %q %q (%v)", me.Class, me.Detail, tt.class, tt.detail, err)
				}
				if me.Usage != (model.Usage{}) {
					t.Fatalf("usage %+v: a refusal is not billed", me.Usage)
				}
				if n := requests.Load(); n != 1 {
					t.Fatalf("%d requests, want exactly 1 (no retries)", n)
				}
			})
		}
	}
}

// The exception inside a flex call's event stream is the same refusal;
// what was streamed before it is still billed.
func TestFlexRefusalInStream(t *testing.T) {
	for _, lane := range []job.Lane{job.Flex, job.Standard} {
		t.Run(string(lane), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
				s.exception("serviceUnavailableException", `{"message":"Bedrock is unable to process your request."}`)
			}))
			defer srv.Close()
			r := request()
			r.Lane = lane
			_, err := newClient(t, srv.URL, true).Generate(context.Background(), r)
			me := asModelError(t, err)
			want := job.Overloaded
			if lane == job.Flex {
				want = job.CapacityUnavailable
			}
			if me.Class != want || me.Detail != "stream ServiceUnavailableException" {
				t.Fatalf("class %q detail %q, want %q", me.Class, me.Detail, want)
			}
			if u := (model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 1, Estimated: true}); me.Usage != u {
				t.Fatalf("usage %+v, want %+v: the delta streamed is billed", me.Usage, u)
			}
		})
	}
}
