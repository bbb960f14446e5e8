package bedrock_test

import (
	"bytes"
	"context"
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
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// A frame cut in its middle is a cut connection; a frame whose checksum
// fails is Bedrock's (or a proxy's) fault. Both bill the deltas read
// (the suite holds the cuts every provider shares).
func TestBrokenFrames(t *testing.T) {
	half := func(w http.ResponseWriter, raw []byte) {
		_, _ = w.Write(raw[:len(raw)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	corrupt := func(w http.ResponseWriter, raw []byte) {
		raw[len(raw)-6] ^= 0xff // a payload byte: the message CRC no longer matches
		_, _ = w.Write(raw)
	}
	tests := []struct {
		name  string
		write func(w http.ResponseWriter, frame []byte)
		class job.ErrorClass
	}{
		{"cut mid frame", half, job.Network},
		{"frame fails its checksum", corrupt, job.ProviderError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
				var b bytes.Buffer
				_ = eventstream.NewEncoder().Encode(&b, frame("event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" upon"}}`))
				tt.write(w, b.Bytes())
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, true).Generate(context.Background(), request())
			me := asModelError(t, err)
			if want := (model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 1, Estimated: true}); me.Class != tt.class || me.Usage != want {
				t.Fatalf("got %q %+v (%v), want %q %+v", me.Class, me.Usage, err, tt.class, want)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests, want exactly 1 (no retries)", n)
			}
		})
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
