package anthropic_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// The samples in testdata/samples are answers as Anthropic's documentation
// shows them, the cache's counts and the serving tier included: a Messages
// response ("Prompt caching",
// https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching), a
// stream's events ("Streaming Messages",
// https://docs.anthropic.com/en/docs/build-with-claude/streaming) and a
// batch's result lines ("Batch processing",
// https://docs.anthropic.com/en/docs/build-with-claude/batch-processing).
// Each must parse into the response or error it stands for.

// sample is testdata/samples/name.
var sample = modeltest.Sample

func TestSamples(t *testing.T) {
	tests := []struct {
		file, contentType string
		stream            bool
		want              model.Response
	}{
		{"message_cache.json", "application/json", false, model.Response{
			Output: "The major themes in Pride and Prejudice include pride, prejudice, marriage and social class.",
			Model:  "claude-sonnet-4-5-20250929", FinishReason: "end_turn", Served: job.Standard,
			// input_tokens leaves the cache write out: 21 + 188086.
			Usage: model.Usage{InputTokens: 188107, OutputTokens: 393, CacheWriteTokens: 188086}}},
		{"stream_cache.sse", "text/event-stream", true, model.Response{
			Output: "Hello!", Model: "claude-opus-4-1-20250805", FinishReason: "end_turn", Served: job.Standard,
			Usage: model.Usage{InputTokens: 188111, OutputTokens: 15, CachedInputTokens: 188086}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := sample(t, tt.file)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			got, err := clientAt(t, srv.URL, tt.stream).Generate(context.Background(), request())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A batch's result lines: a succeeded one with its cache read (billed at
// the batch lane, whose tier "batch" names no other lane), an errored one
// classified as a call's error body is.
func TestBatchResultSamples(t *testing.T) {
	results := sample(t, "batch_results.jsonl")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/results") {
			_, _ = w.Write(results)
			return
		}
		_, _ = w.Write([]byte(`{"id":"msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d","type":"message_batch","processing_status":"ended"}`))
	}))
	defer srv.Close()
	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]model.Response{}
	errs := map[string]error{}
	err = c.BatchResults(context.Background(), "msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d", func(id string, r model.Response, err error) error {
		got[id], errs[id] = r, err
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Model: "claude-haiku-4-5-20251001", FinishReason: "end_turn",
		Output: "Hello again! It's nice to see you. How can I assist you today? Is there anything specific you'd like to chat about or any questions you have?",
		Usage:  model.Usage{InputTokens: 2059, OutputTokens: 36, CachedInputTokens: 2048}}
	if got["my-second-request"] != want || errs["my-second-request"] != nil {
		t.Fatalf("succeeded line: %+v, %v\nwant %+v", got["my-second-request"], errs["my-second-request"], want)
	}
	if class, u := model.Classify(errs["my-first-request"]); class != job.InvalidRequest || u != (model.Usage{}) {
		t.Fatalf("errored line: class %q usage %+v (%v), want invalid_request billed nothing", class, u, errs["my-first-request"])
	}
}
