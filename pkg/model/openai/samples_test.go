package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Every sample of testdata/samples (README.md there says where each comes
// from) parses into the response it must: the counts as billed, cached
// a part of the input and reasoning a part of the output, and the tier
// that served it.

func sample(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func sampleRequest() model.Request {
	return model.Request{Model: "m", Messages: []job.Message{{Role: "user", Content: "hi"}}, MaxTokens: 2000}
}

func TestChatSamples(t *testing.T) {
	tests := []struct {
		file   string
		stream bool
		usage  model.Usage
		served job.Lane
	}{
		{"chat_completion.json", false, model.Usage{InputTokens: 19, OutputTokens: 10}, job.Standard},
		{"chat_completion_cached.json", false,
			model.Usage{InputTokens: 2006, OutputTokens: 300, CachedInputTokens: 1920, ReasoningTokens: 192}, job.Flex},
		{"chat_stream.txt", true, model.Usage{InputTokens: 1117, OutputTokens: 46, CachedInputTokens: 1024}, job.Priority},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := &Client{cfg: Config{Stream: tt.stream}}
			resp := &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(sample(t, tt.file))}
			out, err := c.answer(context.Background(), resp, sampleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if out.Usage != tt.usage || out.Served != tt.served || out.Output == "" {
				t.Fatalf("got %+v served %q, want %+v served %q", out.Usage, out.Served, tt.usage, tt.served)
			}
		})
	}
}

func TestResponseSample(t *testing.T) {
	o, derr := decodeResponse(context.Background(), sample(t, "response.json"))
	if derr != nil {
		t.Fatal(derr)
	}
	b := &call{c: &Client{}, r: sampleRequest()}
	out, err := b.conclude(context.Background(), o)
	want := model.Usage{InputTokens: 75, OutputTokens: 1186, ReasoningTokens: 1024}
	if err != nil || out.Usage != want || out.Served != job.Standard || out.FinishReason != "stop" {
		t.Fatalf("got %+v, %v; want %+v served standard", out, err, want)
	}
}

// A batch line's usage is billed with its parts; its tier says nothing
// (the batch lane prices it).
func TestBatchOutputSample(t *testing.T) {
	want := map[string]model.Usage{
		"request-2": {InputTokens: 22, OutputTokens: 2},
		"request-1": {InputTokens: 1200, OutputTokens: 140, CachedInputTokens: 1024, ReasoningTokens: 128},
	}
	sc := bufio.NewScanner(sample(t, "batch_output.jsonl"))
	n := 0
	for sc.Scan() {
		var l resultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out, err := result(l)
		if err != nil || out.Usage != want[l.CustomID] || out.Served != "" {
			t.Fatalf("%s: got %+v served %q, %v; want %+v", l.CustomID, out.Usage, out.Served, err, want[l.CustomID])
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("%d lines, want %d", n, len(want))
	}
}

func TestErrorSamples(t *testing.T) {
	tests := []struct {
		file   string
		status int
		lane   job.Lane
		class  job.ErrorClass
	}{
		{"400_unsupported_parameter.json", 400, "", job.InvalidRequest},
		{"400_unsupported_value.json", 400, "", job.InvalidRequest},
		{"429_resource_unavailable.json", 429, job.Flex, job.CapacityUnavailable},
		{"429_resource_unavailable_words.json", 429, job.Flex, job.CapacityUnavailable},
		{"429_rate_limit.json", 429, job.Flex, job.RateLimited},
	}
	for _, tt := range tests {
		body, err := os.ReadFile(filepath.Join("testdata", "errors", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if e := statusError(tt.status, body, tt.lane); e.Class != tt.class {
			t.Errorf("%s: class %q, want %q", tt.file, e.Class, tt.class)
		}
	}
	if e := statusError(429, nil, job.Flex); e.Class != job.RateLimited {
		t.Errorf("a bodiless flex 429: class %q, want rate_limited", e.Class)
	}
}
