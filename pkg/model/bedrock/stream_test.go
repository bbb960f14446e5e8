package bedrock_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
)

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
