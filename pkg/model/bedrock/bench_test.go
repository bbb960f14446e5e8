package bedrock_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// answerPieces is a ~50-token answer, one piece a token.
var answerPieces = func() []string {
	words := strings.Fields("Once upon a time, in a valley between two rivers, there lived a clockmaker " +
		"who built a clock that ran backwards. Every evening the villagers gathered to watch its hands " +
		"turn, and every morning they woke a little younger, until the clockmaker, worried, stopped it " +
		"forever with a single")
	for i := 1; i < len(words); i++ {
		words[i] = " " + words[i]
	}
	return words
}()

// BenchmarkGenerate measures what the provider (SDK included: request
// serialisation, SigV4 signing, response or event stream decoding) adds to
// an attempt, against a local server that answers at once with bytes
// encoded beforehand. allocs/op includes the test server's own (net/http
// serving one request).
func BenchmarkGenerate(b *testing.B) {
	var stream bytes.Buffer
	enc := eventstream.NewEncoder()
	add := func(typ, payload string) {
		payload = strings.Replace(payload, "{", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH",`, 1)
		if err := enc.Encode(&stream, frame("event", typ, payload)); err != nil {
			b.Fatal(err)
		}
	}
	add("messageStart", `{"role":"assistant"}`)
	for _, p := range answerPieces {
		add("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"text":%q}}`, p))
	}
	add("contentBlockStop", `{"contentBlockIndex":0}`)
	add("messageStop", `{"stopReason":"end_turn"}`)
	add("metadata", fmt.Sprintf(`{"metrics":{"latencyMs":318},"usage":{"inputTokens":12,"outputTokens":%d,"totalTokens":%d}}`,
		len(answerPieces), 12+len(answerPieces)))
	answer := strings.Join(answerPieces, "")
	converse := []byte(converseJSON(answer, "end_turn", 12, len(answerPieces)))

	for _, mode := range []struct {
		name   string
		stream bool
	}{{"stream", true}, {"converse", false}} {
		b.Run(mode.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if mode.stream {
					w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
					_, _ = w.Write(stream.Bytes())
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(converse)
			}))
			defer srv.Close()
			c := newClient(b, srv.URL, mode.stream)
			ctx := context.Background()
			r := request()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Generate(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				if resp.Output != answer {
					b.Fatalf("output %q", resp.Output)
				}
			}
		})
	}
}
