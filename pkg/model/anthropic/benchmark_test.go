package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/model/anthropic"
)

// answerTokens is the benchmark answer's length: a short, typical reply.
const answerTokens = 50

// benchBodies renders a ~50-token answer once, streamed and not, so the
// fake server costs as little as possible per call.
func benchBodies() (stream, nostream []byte) {
	words := make([]string, answerTokens)
	for i := range words {
		words[i] = fmt.Sprintf(" word%d", i)
	}
	var s bytes.Buffer
	write := func(data string) {
		var ev struct{ Type string }
		_ = json.Unmarshal([]byte(data), &ev)
		fmt.Fprintf(&s, "event: %s\ndata: %s\n\n", ev.Type, data)
	}
	write(messageStart)
	write(blockStart)
	write(ping)
	for _, w := range words {
		write(textDelta(w))
	}
	write(blockStop)
	write(messageDelta("end_turn", answerTokens))
	write(messageStop)
	text, _ := json.Marshal(strings.Join(words, ""))
	nostream = fmt.Appendf(nil, `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant",`+
		`"model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":%s}],"stop_reason":"end_turn",`+
		`"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,`+
		`"output_tokens":%d}}`, text, answerTokens)
	return s.Bytes(), nostream
}

func benchServer(b *testing.B, body []byte, contentType string) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Request-Id", reqID)
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkGenerate measures one attempt against a server with no latency
// returning a ~50-token answer: the overhead the provider adds to a call.
// The fake server runs in the same process, so its allocations are counted
// too; BenchmarkRoundTrip is the same exchange without the provider.
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
			c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: apiKey, Model: "cfg-model", Stream: bc.stream})
			if err != nil {
				b.Fatalf("New: %v", err)
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
			reqBody := []byte(`{"model":"cfg-model","max_tokens":1024,"messages":[{"role":"user","content":"` + prompt + `"}]}`)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(reqBody))
				if err != nil {
					b.Fatalf("Post: %v", err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
