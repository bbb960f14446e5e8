package modeltest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/model"
)

// benchTokens is the benchmark answer's length: a short, typical reply.
const benchTokens = 50

// Benchmark measures what the provider adds to an attempt (docs/benchmarks.md,
// "What a provider adds to an attempt"): Generate against a local server
// that answers at once with a 50-token answer in the provider's wire format,
// streamed and not, and RoundTrip, the same exchange made by a bare
// http.Client reading the body to its end. The server runs in the same
// process, so its allocations are counted too.
func (wi Wire) Benchmark(b *testing.B) {
	u := model.Usage{InputTokens: full.InputTokens, OutputTokens: benchTokens}
	words := make([]string, benchTokens)
	for i := range words {
		words[i] = " word" + strconv.Itoa(i)
	}
	for _, stream := range []bool{true, false} {
		mode := map[bool]string{true: "stream", false: "nostream"}[stream]
		rec := httptest.NewRecorder()
		if stream {
			wi.startStream(rec)
			wi.StreamStart(rec, u.InputTokens)
			for _, w := range words {
				wi.Delta(rec, w)
			}
			wi.StreamEnd(rec, &u)
		} else {
			rec.Header().Set("Content-Type", "application/json")
			wi.Answer(rec, strings.Join(words, ""), &u)
		}
		body, contentType := rec.Body.Bytes(), rec.Header().Get("Content-Type")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(body)
		}))
		b.Cleanup(srv.Close)
		b.Run("Generate/"+mode, func(b *testing.B) {
			p := wi.Client(b, srv.URL, stream, nil)
			r := Request()
			r.Progress = func(int) {}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.Generate(context.Background(), r)
				if err != nil || resp.Usage != u {
					b.Fatalf("Generate: %+v %v", resp.Usage, err)
				}
			}
		})
		b.Run("RoundTrip/"+mode, func(b *testing.B) {
			client := &http.Client{}
			reqBody := []byte(`{"model":"cfg-model","max_tokens":300,"messages":[{"role":"user","content":"` + Prompt + `"}]}`)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(srv.URL, "application/json", bytes.NewReader(reqBody))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
