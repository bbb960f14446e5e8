package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
)

func TestCutAnswers(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		write  func(w http.ResponseWriter)
		class  job.ErrorClass
		usage  model.Usage
	}{
		{
			// The SDK keeps the caller's context on its HTTP request, so
			// net/http's trace tells that the request was written.
			name:  "cut after the request, before the headers",
			write: func(http.ResponseWriter) { panic(http.ErrAbortHandler) },
			class: job.Network,
			usage: worstCase,
		},
		{
			name:   "stream cut after the request, before the headers",
			stream: true,
			write:  func(http.ResponseWriter) { panic(http.ErrAbortHandler) },
			class:  job.Network,
			usage:  model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name:   "stream cut after the headers, before the first event",
			stream: true,
			write: func(w http.ResponseWriter) {
				startStream(w)
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			class: job.Network,
			usage: model.Usage{InputTokens: promptCeiling, Estimated: true},
		},
		{
			name:   "connection reset mid stream",
			stream: true,
			write: func(w http.ResponseWriter) {
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
				s.delta(" upon")
				panic(http.ErrAbortHandler)
			},
			class: job.Network,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 2, Estimated: true},
		},
		{
			name:   "cut mid frame",
			stream: true,
			write: func(w http.ResponseWriter) {
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
				var b bytes.Buffer
				_ = eventstream.NewEncoder().Encode(&b, frame("event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" upon"}}`))
				_, _ = w.Write(b.Bytes()[:b.Len()/2])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			class: job.Network,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true},
		},
		{
			name:   "stream ends without messageStop",
			stream: true,
			write: func(w http.ResponseWriter) {
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
			},
			class: job.Network,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true},
		},
		{
			name:   "frame fails its checksum",
			stream: true,
			write: func(w http.ResponseWriter) {
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
				var b bytes.Buffer
				_ = eventstream.NewEncoder().Encode(&b, frame("event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" upon"}}`))
				raw := b.Bytes()
				raw[len(raw)-6] ^= 0xff // a payload byte: the message CRC no longer matches
				_, _ = w.Write(raw)
			},
			class: job.ProviderError,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true},
		},
		{
			name: "cut mid body",
			write: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "1000")
				fmt.Fprint(w, `{"metrics":{"latencyMs":412},"output":{"message":{"content":[{"text":"Once`)
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			class: job.Network,
			usage: worstCase, // the answer was generated before it was sent
		},
		{
			name: "body is not JSON",
			write: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, "<html>hello</html>")
			},
			class: job.ProviderError,
			usage: worstCase,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				tt.write(w)
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, tt.stream).Generate(context.Background(), capped())
			me := asModelError(t, err)
			if me.Class != tt.class {
				t.Fatalf("class %q, want %q (%v)", me.Class, tt.class, err)
			}
			if me.Usage != tt.usage {
				t.Fatalf("usage %+v, want %+v billed", me.Usage, tt.usage)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestCancelClosesStream(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s := startStream(w)
		s.messageStart()
		s.delta("Once")
		s.delta(" upon")
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
			t.Error("client kept the stream open after cancelling")
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := request()
	var cancelled time.Time
	r.Progress = func(n int) {
		if n == 2 {
			cancelled = time.Now()
			cancel()
		}
	}
	_, err := newClient(t, srv.URL, true).Generate(ctx, r)
	me := asModelError(t, err)
	if me.Class != job.Cancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("class %q, want cancelled (%v)", me.Class, err)
	}
	// Money spent on a cancelled stream is still spent.
	if me.Usage != (model.Usage{InputTokens: promptCeiling, OutputTokens: 2, Estimated: true}) {
		t.Fatalf("usage %+v, want the two deltas received billed", me.Usage)
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("server never saw the client go away")
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Fatalf("the stream closed %v after the cancel, want promptly", d)
	}
}

// slowWriter is a connection whose writes after the first (the request
// headers) wait until released: the transport is still busy with the
// request body when the answer is already being read.
type slowWriter struct {
	net.Conn
	writes  int
	release <-chan struct{}
}

func (c *slowWriter) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.writes++; c.writes > 1 {
		select {
		case <-c.release:
		case <-time.After(5 * time.Second):
		}
	}
	return n, err
}

// The SDK closes the request body once the response headers are in; a
// transport that looks at the body after that must not take the closed
// body for a failed write and close the connection under the answer.
func TestAnswerOutlivesRequestBody(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				var s *eventStream
				if stream {
					s = startStream(w)
					s.messageStart()
				} else {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
				}
				// The client has the headers and the SDK has closed the
				// request body: only now may the transport finish the
				// request, while the answer is still coming.
				time.Sleep(20 * time.Millisecond)
				close(release)
				time.Sleep(30 * time.Millisecond)
				if stream {
					s.answer("end_turn", 9, 2, "Once", " upon")
					return
				}
				fmt.Fprint(w, converseJSON("Once upon", "end_turn", 9, 2))
			}))
			defer srv.Close()
			cfg := awsConfig()
			cfg.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				return &slowWriter{Conn: c, release: release}, err
			}}}
			c, err := bedrock.New(bedrock.Config{AWS: cfg, Endpoint: srv.URL, Model: modelID, Stream: stream})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			resp, err := c.Generate(context.Background(), request())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if resp.Output != "Once upon" || resp.Usage != (model.Usage{InputTokens: 9, OutputTokens: 2}) {
				t.Fatalf("got %+v", resp)
			}
		})
	}
}
