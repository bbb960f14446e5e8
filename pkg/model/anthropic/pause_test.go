package anthropic_test

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
// the resets below are whole seconds, and the client counts the time the
// answer took to read off the pause.
const slack = 2 * time.Second

// limit is the headers of a limit of kind with remaining left, reset
// after d from when the server answers.
func limit(kind, remaining string, d time.Duration) []string {
	return []string{"anthropic-ratelimit-" + kind + "-remaining", remaining,
		"anthropic-ratelimit-" + kind + "-reset", time.Now().Add(d).UTC().Format(time.RFC3339)}
}

// The provider's rate-limit signal reaches the worker: a refused call's
// error carries the pause its headers asked for, and an answer carries
// what they said is left of the key's limits.
func TestPause(t *testing.T) {
	rateLimited := func(w http.ResponseWriter) {
		fmt.Fprintf(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":%q}`, reqID)
	}
	answer := func(w http.ResponseWriter) {
		fmt.Fprint(w, message("end_turn", &model.Usage{InputTokens: 12, OutputTokens: 7}, "Once upon", " a time."))
	}
	stream := func(w http.ResponseWriter) { streamAnswer(w, "end_turn", 7, "Once upon", " a time.") }
	tests := []struct {
		name   string
		stream bool
		status int
		header func() []string // name, value pairs, made when the server answers
		body   func(w http.ResponseWriter)
		class  job.ErrorClass // "" for an answer
		want   time.Duration  // the error's pause
		left   model.Left     // the answer's word of what is left
	}{
		{
			name: "429 with retry-after and a spent limit", status: http.StatusTooManyRequests,
			header: func() []string {
				h := append([]string{"retry-after", "7"}, limit("input-tokens", "0", 40*time.Second)...)
				return append(h, limit("requests", "49", 50*time.Second)...)
			},
			body: rateLimited, class: job.RateLimited, want: 40 * time.Second,
		},
		{
			name: "429 streamed, retry-after, limits left", stream: true, status: http.StatusTooManyRequests,
			header: func() []string {
				h := append([]string{"retry-after", "7"}, limit("tokens", "1200", 50*time.Second)...)
				return append(h, limit("output-tokens", "800", 50*time.Second)...)
			},
			body: rateLimited, class: job.RateLimited, want: 7 * time.Second,
		},
		{
			name: "529 with retry-after", status: 529,
			header: func() []string { return []string{"retry-after", "3"} },
			body: func(w http.ResponseWriter) {
				fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			},
			class: job.Overloaded, want: 3 * time.Second,
		},
		{
			name: "answer with a spent limit", status: http.StatusOK,
			header: func() []string { return limit("output-tokens", "0", 30*time.Second) },
			body:   answer, left: model.Left{Tokens: 0, HasTokens: true},
		},
		{
			name: "streamed answer with a spent limit", stream: true, status: http.StatusOK,
			header: func() []string { return limit("requests", "0", 30*time.Second) },
			body:   stream, left: model.Left{Requests: 0, HasRequests: true},
		},
		{
			name: "ordinary answer", status: http.StatusOK,
			header: func() []string { return limit("requests", "49", 30*time.Second) },
			body:   answer, left: model.Left{Requests: 49, HasRequests: true},
		},
		{
			name: "ordinary streamed answer", stream: true, status: http.StatusOK,
			header: func() []string { return nil },
			body:   stream, left: model.Left{},
		},
		{
			// The limit is spent whatever became of the answer.
			name: "refused stream with a spent limit", stream: true, status: http.StatusOK,
			header: func() []string { return limit("tokens", "0", 30*time.Second) },
			body:   func(w http.ResponseWriter) { streamAnswer(w, "refusal", 7, "I can't") },
			class:  job.ContentFiltered, want: 30 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := tt.header()
				for i := 0; i+1 < len(h); i += 2 {
					w.Header().Set(h[i], h[i+1])
				}
				w.Header().Set("Request-Id", reqID)
				if tt.stream && tt.status == http.StatusOK {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				w.WriteHeader(tt.status)
				tt.body(w)
			}))
			defer srv.Close()
			resp, err := clientAt(t, srv.URL, tt.stream).Generate(context.Background(), request())
			modeltest.Heard{Class: tt.class, Left: tt.left, Pause: tt.want, Slack: slack}.Check(t, resp, err)
		})
	}
}
