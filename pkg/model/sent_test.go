package model_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// failingConn is a connection whose writes fail once limit bytes went
// out: the request's headers leave, its body is cut in the middle.
type failingConn struct {
	net.Conn
	limit int
}

func (c *failingConn) Write(p []byte) (int, error) {
	if len(p) > c.limit {
		n, _ := c.Conn.Write(p[:max(c.limit, 0)])
		c.limit -= n
		return n, errors.New("write cut")
	}
	c.limit -= len(p)
	return c.Conn.Write(p)
}

// stall reads the whole request and answers nothing until the client goes.
func stall(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func TestTraceSent(t *testing.T) {
	body := strings.Repeat("x", 256<<10) // larger than any write buffer
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return "http://" + addr
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		tls     bool
		http2   bool
		url     func(srv *httptest.Server) string
		client  func(srv *httptest.Server) *http.Client
		sent    bool
	}{
		{name: "answered", handler: func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }, sent: true},
		{name: "stalled before the headers", handler: stall, sent: true},
		{name: "stalled before the headers, HTTP/2", handler: stall, tls: true, http2: true, sent: true},
		{name: "cut after reading the request", sent: true, handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			panic(http.ErrAbortHandler)
		}},
		{name: "connection refused", handler: stall, url: func(*httptest.Server) string { return refused() }},
		{name: "TLS certificate not trusted", handler: stall, tls: true,
			client: func(*httptest.Server) *http.Client { return &http.Client{} }},
		{name: "body cut while written", handler: stall, client: func(*httptest.Server) *http.Client {
			return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				return &failingConn{Conn: c, limit: 64 << 10}, err
			}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var proto atomic.Int32
			bodyRead := make(chan struct{})
			var once sync.Once
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				proto.Store(int32(r.ProtoMajor))
				// The whole body read here tells the test its request was
				// written in full (the handler then reads nothing more).
				if _, err := io.Copy(io.Discard, r.Body); err == nil {
					once.Do(func() { close(bodyRead) })
				}
				tt.handler(w, r)
			}))
			srv.EnableHTTP2 = tt.http2
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a refused handshake is a case
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			url, client := srv.URL, srv.Client()
			if tt.url != nil {
				url = tt.url(srv)
			}
			if tt.client != nil {
				client = tt.client(srv)
			}
			// The caller's own trace keeps working next to TraceSent's.
			var callerSaw atomic.Bool
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				WroteRequest: func(httptrace.WroteRequestInfo) { callerSaw.Store(true) },
			})
			// A stalled call is given up once the server has its whole
			// request, as a caller's timeout would: a fixed 300 ms timeout
			// here once ended a TLS and HTTP/2 call before it was written,
			// beside a second make test. 10 s bounds a case that never says.
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			ctx, sent := model.TraceSent(ctx)
			finished := make(chan struct{})
			defer close(finished)
			go func() {
				select {
				case <-finished:
				case <-bodyRead:
					cancel()
				}
			}()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			t.Logf("call error: %v", err)
			if tt.http2 && proto.Load() != 2 {
				t.Fatalf("the server saw HTTP/%d, want HTTP/2", proto.Load())
			}
			if got := sent.Done(); got != tt.sent {
				t.Fatalf("Done() = %v, want %v (call error: %v)", got, tt.sent, err)
			}
			if tt.sent && !callerSaw.Load() {
				t.Fatal("the caller's own WroteRequest hook was not called")
			}
			r := model.Request{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 50}
			want := model.Usage{}
			if tt.sent {
				want = model.Usage{InputTokens: job.PromptCeiling(r.Messages), OutputTokens: 50, Estimated: true}
			}
			if got := sent.Unanswered(r, false); got != want {
				t.Fatalf("Unanswered = %+v, want %+v", got, want)
			}
		})
	}
}
