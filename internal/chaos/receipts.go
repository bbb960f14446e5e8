package chaos

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// genHeader names the generation an answer of the model server carries
// ("aj/17/2": namespace, job index, request rank), so the client side can
// say what it received of it.
const genHeader = "X-Chaos-Generation"

// Receipt is what a model client read of one generation's answer: the
// content chunks of a stream, and whether it read the whole answer (a
// stream's [DONE], a plain answer's last byte). Only the client side can
// tell: a server cannot know whether bytes it wrote just before the client
// gave up were read.
type Receipt struct {
	Gen      string
	Chunks   int
	Complete bool
	// Where is the reader: a worker incarnation, or the baseline.
	Where string
}

// Receiver is told of each receipt when the client closes the answer.
type Receiver interface{ Received(Receipt) }

// observe wraps a model client's transport: each answer of the model
// server is read through a counter that reports its receipt on Close. The
// provider reads the body exactly as it would without it.
func observe(next http.RoundTripper, rec Receiver, where string) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get(genHeader) == "" {
			return resp, err
		}
		resp.Body = &receiptBody{ReadCloser: resp.Body, rec: rec, want: resp.ContentLength,
			r: Receipt{Gen: resp.Header.Get(genHeader), Where: where}, stream: resp.Header.Get("Content-Type") == "text/event-stream"}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type receiptBody struct {
	io.ReadCloser
	rec    Receiver
	stream bool
	want   int64
	n      int64
	line   []byte
	r      Receipt
	once   sync.Once
}

var (
	doneLine     = []byte("data: [DONE]")
	contentDelta = []byte(`"content":"`)
)

func (b *receiptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if b.stream {
		for _, c := range p[:n] {
			if c != '\n' {
				b.line = append(b.line, c)
				continue
			}
			switch {
			case bytes.HasPrefix(b.line, doneLine):
				b.r.Complete = true
			case bytes.HasPrefix(b.line, []byte("data:")) && bytes.Contains(b.line, contentDelta):
				b.r.Chunks++
			}
			b.line = b.line[:0]
		}
	} else if b.want >= 0 && b.n >= b.want || b.want < 0 && err == io.EOF {
		b.r.Complete = true
	}
	return n, err
}

func (b *receiptBody) Close() error {
	b.once.Do(func() { b.rec.Received(b.r) })
	return b.ReadCloser.Close()
}
