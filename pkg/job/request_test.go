package job_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The input's rules hold whatever decoded it: pkg/api's create body tests
// (createbody_test.go) prove each reaches a caller as a 400 naming the
// field; these prove the rules themselves.
func TestCheckInput(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 1024, MaxMaxTokens: 32_768}
	msgs := func(ms ...job.Message) job.Input { return job.Input{Messages: ms} }
	user := job.Message{Role: "user", Content: "x"}
	temp := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		name  string
		in    job.Input
		field string // "" means accepted
	}{
		{"one message", msgs(user), ""},
		{"every role", msgs(job.Message{Role: "system", Content: "s"}, user, job.Message{Role: "assistant", Content: "a"}), ""},
		{"temperature 0", job.Input{Messages: []job.Message{user}, Temperature: temp(0)}, ""},
		{"temperature 2", job.Input{Messages: []job.Message{user}, Temperature: temp(2)}, ""},
		{"max_tokens max", job.Input{Messages: []job.Message{user}, MaxTokens: 32_768}, ""},
		{"no messages", msgs(), "input.messages"},
		{"too many messages", msgs(user, user, user, user), "input.messages"},
		{"unknown role", msgs(user, job.Message{Role: "tool", Content: "x"}), "input.messages[1].role"},
		{"role in another case", msgs(job.Message{Role: "User", Content: "x"}), "input.messages[0].role"},
		{"empty content", msgs(job.Message{Role: "user"}), "input.messages[0].content"},
		{"max_tokens negative", job.Input{Messages: []job.Message{user}, MaxTokens: -1}, "input.max_tokens"},
		{"max_tokens above max", job.Input{Messages: []job.Message{user}, MaxTokens: 32_769}, "input.max_tokens"},
		{"temperature negative", job.Input{Messages: []job.Message{user}, Temperature: temp(-0.1)}, "input.temperature"},
		{"temperature above 2", job.Input{Messages: []job.Message{user}, Temperature: temp(2.01)}, "input.temperature"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			err := l.CheckInput(&in)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckInput(%+v): %v", tt.in, err)
				}
				return
			}
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeInvalidRequest || e.Field != tt.field || e.Message == "" {
				t.Fatalf("CheckInput(%+v) = %v, want invalid_request on %s with a message", tt.in, err, tt.field)
			}
			if strings.Contains(e.Message, "job.") {
				t.Errorf("message names a Go type: %q", e.Message)
			}
		})
	}
	in := msgs(user)
	if err := l.CheckInput(&in); err != nil || in.MaxTokens != 1024 {
		t.Errorf("max_tokens not given: %d (%v), want the default 1024", in.MaxTokens, err)
	}
}

func TestNewJob(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("CET", 3600))
	ms := time.Date(2025, 3, 4, 4, 6, 7, 891_000_000, time.UTC)
	r := job.CreateRequest{Tenant: "tenant-a", RequestKey: "key-1", InputHash: "sha256:ab", Model: "default",
		InputJSON: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":1024}`),
		Deadline:  time.Minute, Budget: 1_500_000_000, MaxAttempts: 3, Metadata: json.RawMessage(`{"a":1}`)}
	j := r.NewJob(now, 7*24*time.Hour)
	want := job.Job{
		ID:          job.NewID("tenant-a", "key-1"),
		Tenant:      "tenant-a",
		RequestKey:  "key-1",
		InputHash:   r.InputHash,
		Model:       "default",
		Input:       r.InputJSON,
		Metadata:    json.RawMessage(`{"a":1}`),
		State:       job.Queued,
		MaxAttempts: 3,
		Budget:      1_500_000_000,
		Deadline:    ms.Add(time.Minute),
		Version:     1,
		CreatedAt:   ms,
		UpdatedAt:   ms,
		ExpiresAt:   ms.Add(time.Minute + 7*24*time.Hour),
	}
	if !jobsEqual(j, want) {
		t.Errorf("NewJob:\n got %+v\nwant %+v", j, want)
	}
	if j.Attempts != 0 || j.Cost != 0 || j.LeaseOwner != "" || !j.LeaseUntil.IsZero() || j.ErrorClass != "" || j.Result != nil || j.Progress != 0 {
		t.Errorf("NewJob has attempt state: %+v", j)
	}
	if j.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %s, want UTC", j.CreatedAt.Location())
	}
}
