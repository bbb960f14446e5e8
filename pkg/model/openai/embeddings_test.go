package openai_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

// embedder is a client of a fresh openaitest server over HTTP.
func embedder(t *testing.T) (*openai.Client, *openaitest.Server) {
	t.Helper()
	fake := &openaitest.Server{}
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: apiKey, Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	return c, fake
}

func texts(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// wantVectors fails unless output holds the fake's vector of each text,
// in order, at dims.
func wantVectors(t *testing.T, output string, in []string, dims int) {
	t.Helper()
	got, err := apiwire.DecodeEmbeddings(output)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("%d vectors, want %d", len(got), len(in))
	}
	for i, text := range in {
		if want := openaitest.Vector(text, dims); !slices.Equal(got[i], want) {
			t.Fatalf("vector %d (%q): not the fake's for its text", i, text)
		}
	}
}

func tokens(in []string) int64 {
	var n int64
	for _, s := range in {
		n += openaitest.EmbeddingTokens(s)
	}
	return n
}

// 5,000 texts go in calls of 2,048 (the request's input limit), in
// order; the answer is every text's vector in input order and the usage
// the calls' sum, which the fake's own count gives independently.
func TestEmbeddingsSplitIntoCallsOfTheInputLimit(t *testing.T) {
	c, fake := embedder(t)
	in := texts(5000, func(i int) string { return fmt.Sprintf("text number %d", i) })
	resp, err := c.Generate(context.Background(), model.Request{JobID: "j", Model: "text-embedding-3-small", Texts: in, Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.EmbeddingCalls(); !slices.Equal(got, []int{2048, 2048, 904}) {
		t.Errorf("calls of %v inputs, want [2048 2048 904]", got)
	}
	if resp.Usage.InputTokens != tokens(in) || resp.Usage.OutputTokens != 0 || resp.Usage.Estimated {
		t.Errorf("usage %+v, want %d input tokens, exact", resp.Usage, tokens(in))
	}
	wantVectors(t, resp.Output, in, 16)
	price := job.Price{InputPerToken: 2, OutputPerToken: 99}
	if got, want := resp.Usage.Cost(price), job.Nanocents(2*tokens(in)); got != want {
		t.Errorf("cost %d, want %d (input tokens at the input price)", got, want)
	}
}

// Texts whose ceiling would pass the request's 300,000-token cap go in
// more calls, however few they are; a model's default dimensions come
// back when the job names none.
func TestEmbeddingsSplitUnderTheTokenCap(t *testing.T) {
	c, fake := embedder(t)
	// Each text's ceiling is 50,000 tokens: six fill a call.
	in := texts(13, func(i int) string { return strings.Repeat(string(rune('a'+i)), 100_000) })
	resp, err := c.Generate(context.Background(), model.Request{Model: "text-embedding-3-small", Texts: in})
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.EmbeddingCalls(); !slices.Equal(got, []int{6, 6, 1}) {
		t.Errorf("calls of %v inputs, want [6 6 1]", got)
	}
	wantVectors(t, resp.Output, in, 1536)
}

// A call that fails mid-attempt ends it with its class, the calls
// already answered still billed.
func TestAnEmbeddingCallThatFailsKeepsWhatWasPaid(t *testing.T) {
	c, fake := embedder(t)
	in := texts(3000, func(i int) string { return fmt.Sprintf("t%d", i) })
	in[2500] = "[[openai:status=500]]"
	_, err := c.Generate(context.Background(), model.Request{Model: "text-embedding-3-small", Texts: in, Dimensions: 8})
	class, used := model.Classify(err)
	if err == nil || class != job.ProviderError {
		t.Fatalf("got %v (%s), want a provider_error", err, class)
	}
	if want := tokens(in[:2048]); used.InputTokens != want {
		t.Errorf("billed %d input tokens, want the first call's %d", used.InputTokens, want)
	}
	if got := fake.EmbeddingCalls(); !slices.Equal(got, []int{2048}) {
		t.Errorf("answered calls %v, want [2048]", got)
	}
}

// The vectors ride the wire as base64 and come back bit for bit: a
// value no decimal rendering keeps (the fake's are arbitrary float32s)
// survives.
func TestEmbeddingsAreAskedAsBase64(t *testing.T) {
	c, _ := embedder(t)
	in := []string{"one", "two"}
	resp, err := c.Generate(context.Background(), model.Request{Model: "text-embedding-3-small", Texts: in, Dimensions: 32})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := apiwire.DecodeEmbeddings(resp.Output)
	for i := range in {
		want := openaitest.Vector(in[i], 32)
		for j := range want {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[j]) {
				t.Fatalf("vector %d[%d] = %v, want %v", i, j, got[i][j], want[j])
			}
		}
	}
}

// An embedding call whose answer never came is billed its texts'
// ceiling and no output, whatever output cap its rung has.
func TestALostEmbeddingAnswerIsBilledItsTextsCeilingOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rung := job.Rung{Model: "text-embedding-3-small", Embeds: true, MaxTokens: 4096}
	in := job.Input{Texts: []string{"abcd", "abc"}}
	_, err = c.Generate(context.Background(), model.RequestFor("j", rung, in))
	_, used := model.Classify(err)
	if err == nil || used.InputTokens != in.Ceiling() || used.OutputTokens != 0 || !used.Estimated {
		t.Fatalf("got %v, usage %+v: want an error billed %d input tokens, no output, estimated", err, used, in.Ceiling())
	}
}
