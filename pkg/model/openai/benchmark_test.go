package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/model/openai"
)

// answerTokens is the benchmark answer's length: a short, typical reply.
const answerTokens = 50

// benchBodies renders a ~50-token answer once, streamed (one chunk a
// token, then the usage chunk) and not.
func benchBodies() (stream, plain []byte) {
	words := make([]string, answerTokens)
	for i := range words {
		words[i] = fmt.Sprintf(" word%d", i)
	}
	var s bytes.Buffer
	fmt.Fprintf(&s, "data: %s\n\n", roleChunk)
	for _, w := range words {
		fmt.Fprintf(&s, "data: %s\n\n", contentChunk(w))
	}
	fmt.Fprintf(&s, "data: %s\n\n", fmt.Sprintf(finishChunk, "stop"))
	fmt.Fprintf(&s, "data: %s\n\n", strings.Replace(usageChunk, `"completion_tokens":4`, fmt.Sprintf(`"completion_tokens":%d`, answerTokens), 1))
	s.WriteString("data: [DONE]\n\n")
	plain = fmt.Appendf(nil, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,`+
		`"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":%d}}`,
		strings.Join(words, ""), answerTokens)
	return s.Bytes(), plain
}

func benchServer(b *testing.B, body []byte, contentType string) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkGenerate measures one attempt against a server with no latency
// returning a ~50-token answer: the overhead the provider adds to a call.
// BenchmarkRoundTrip is the same exchange without the provider.
func BenchmarkGenerate(b *testing.B) {
	streamBody, plainBody := benchBodies()
	for _, bc := range []struct {
		name        string
		stream      bool
		body        []byte
		contentType string
	}{
		{"stream", true, streamBody, "text/event-stream"},
		{"nostream", false, plainBody, "application/json"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := benchServer(b, bc.body, bc.contentType)
			c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: apiKey, Model: "cfg-model", Stream: bc.stream})
			if err != nil {
				b.Fatal(err)
			}
			r := request()
			r.Progress = func(int) {}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Generate(ctx, r)
				if err != nil || resp.Usage.OutputTokens != answerTokens {
					b.Fatalf("Generate: %+v %v", resp.Usage, err)
				}
			}
		})
	}
}

// BenchmarkRoundTrip is BenchmarkGenerate's exchange with a bare
// http.Client reading the body to the end: the floor the provider's
// overhead is measured against.
func BenchmarkRoundTrip(b *testing.B) {
	streamBody, plainBody := benchBodies()
	for _, bc := range []struct {
		name        string
		body        []byte
		contentType string
	}{
		{"stream", streamBody, "text/event-stream"},
		{"nostream", plainBody, "application/json"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := benchServer(b, bc.body, bc.contentType)
			client := &http.Client{}
			reqBody := []byte(`{"model":"cfg-model","messages":[{"role":"user","content":"` + prompt + `"}]}`)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(reqBody))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
