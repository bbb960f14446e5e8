package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// slack is how much shorter than the headers said a pause may come back:
// the client counts the time the answer took to read off it.
const slack = time.Second

// The provider's rate-limit signal reaches the worker: a refused call's
// error carries the pause its headers asked for, and an answer carries
// what they said is left of the key's limits.
func TestPause(t *testing.T) {
	spentTokens := []string{"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "30s"}
	tests := []struct {
		name   string
		stream bool
		status int
		header []string // name, value pairs
		body   func(w http.ResponseWriter)
		class  job.ErrorClass // "" for an answer
		want   time.Duration  // the error's pause
		left   model.Left     // the answer's word of what is left
	}{
		{
			name: "429 with retry-after and a spent limit", status: http.StatusTooManyRequests,
			header: []string{"retry-after", "7", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20s",
				"x-ratelimit-remaining-tokens", "149000", "x-ratelimit-reset-tokens", "6m0s"},
			body:  func(w http.ResponseWriter) { fmt.Fprint(w, errorJSON("Rate limit reached", "requests")) },
			class: job.RateLimited, want: 20 * time.Second,
		},
		{
			name: "429 with retry-after, limits left", status: http.StatusTooManyRequests,
			header: []string{"retry-after", "7", "x-ratelimit-remaining-requests", "499", "x-ratelimit-reset-requests", "120ms",
				"x-ratelimit-remaining-tokens", "149000", "x-ratelimit-reset-tokens", "6m0s"},
			body:  func(w http.ResponseWriter) { fmt.Fprint(w, errorJSON("Rate limit reached", "requests")) },
			class: job.RateLimited, want: 7 * time.Second,
		},
		{
			name: "429 streamed, retry-after-ms", stream: true, status: http.StatusTooManyRequests,
			header: []string{"retry-after", "7", "retry-after-ms", "7500"},
			body:   func(w http.ResponseWriter) { fmt.Fprint(w, errorJSON("Rate limit reached", "requests")) },
			class:  job.RateLimited, want: 7500 * time.Millisecond,
		},
		{
			name: "503 with retry-after", status: http.StatusServiceUnavailable, header: []string{"retry-after", "3"},
			body: func(w http.ResponseWriter) {
				fmt.Fprint(w, errorJSON("The engine is currently overloaded", "server_error"))
			},
			class: job.Overloaded, want: 3 * time.Second,
		},
		{
			name: "answer with a spent limit", status: http.StatusOK, header: spentTokens,
			body: func(w http.ResponseWriter) {
				fmt.Fprint(w, completion("Once", "stop", &model.Usage{InputTokens: 12, OutputTokens: 1}))
			}, left: model.Left{Tokens: 0, HasTokens: true},
		},
		{
			name: "streamed answer with a spent limit", stream: true, status: http.StatusOK, header: spentTokens,
			body: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, finishChunk("stop"))
				sse(w, "[DONE]")
			}, left: model.Left{Tokens: 0, HasTokens: true},
		},
		{
			// An answer's word is what is left, whatever its reset.
			name: "streamed answer outlasting the reset", stream: true, status: http.StatusOK,
			header: []string{"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "100ms"},
			body: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				time.Sleep(200 * time.Millisecond)
				sse(w, finishChunk("stop"))
				sse(w, "[DONE]")
			}, left: model.Left{Tokens: 0, HasTokens: true},
		},
		{
			name: "ordinary answer", status: http.StatusOK,
			header: []string{"x-ratelimit-remaining-requests", "499", "x-ratelimit-reset-requests", "120ms"},
			body: func(w http.ResponseWriter) {
				fmt.Fprint(w, completion("Once", "stop", &model.Usage{InputTokens: 12, OutputTokens: 1}))
			}, left: model.Left{Requests: 499, HasRequests: true},
		},
		{
			name: "ordinary streamed answer", stream: true, status: http.StatusOK,
			body: func(w http.ResponseWriter) {
				sse(w, contentChunk("Once"))
				sse(w, finishChunk("stop"))
				sse(w, "[DONE]")
			}, left: model.Left{},
		},
		{
			// The limit is spent whatever became of the answer.
			name: "filtered answer with a spent limit", status: http.StatusOK, header: spentTokens,
			body: func(w http.ResponseWriter) {
				fmt.Fprint(w, completion("Once", "content_filter", &model.Usage{InputTokens: 12, OutputTokens: 1}))
			},
			class: job.ContentFiltered, want: 30 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tt.header); i += 2 {
					w.Header().Set(tt.header[i], tt.header[i+1])
				}
				w.WriteHeader(tt.status)
				tt.body(w)
			}))
			defer srv.Close()
			resp, err := wire().Client(t, srv.URL, tt.stream, nil).Generate(context.Background(), modeltest.Request())
			modeltest.Heard{Class: tt.class, Left: tt.left, Pause: tt.want, Slack: slack}.Check(t, resp, err)
		})
	}
}
