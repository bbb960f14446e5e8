package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
)

// scripted answers each request with the next of its answers (the last one
// repeats) and records the paths and User-Agents it saw.
type scripted struct {
	*httptest.Server
	mu      sync.Mutex
	answers []func(http.ResponseWriter)
	paths   []string
	agents  []string
}

func clientServer(t *testing.T, answers []func(http.ResponseWriter)) *scripted {
	s := &scripted{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.EscapedPath())
		s.agents = append(s.agents, r.UserAgent())
		a := s.answers[min(len(s.paths), len(s.answers))-1]
		s.mu.Unlock()
		a(w)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.paths)
}

func answer(status int, contentType, body string, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const okView = `{"id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"running","version":2}`

func TestRetriesTemporaryAnswers(t *testing.T) {
	tests := []struct {
		name      string
		answers   []func(http.ResponseWriter)
		wantWaits []time.Duration
		wantErr   *client.Error // nil: the Get succeeds
	}{
		{
			name: "gateway throttling (429, not a problem) then success",
			answers: []func(http.ResponseWriter){
				answer(429, "application/json", `{"message":"Too Many Requests"}`),
				answer(200, "application/json", okView),
			},
			wantWaits: []time.Duration{500 * time.Millisecond},
		},
		{
			name: "503 unavailable with Retry-After, then success",
			answers: []func(http.ResponseWriter){
				answer(503, "application/problem+json", `{"status":503,"code":"unavailable","title":"Service unavailable"}`, "Retry-After", "3"),
				answer(200, "application/json", okView),
			},
			wantWaits: []time.Duration{3 * time.Second},
		},
		{
			name: "a Retry-After over MaxRetryWait is capped",
			answers: []func(http.ResponseWriter){
				answer(503, "application/problem+json", `{"status":503,"code":"unavailable"}`, "Retry-After", "3600"),
				answer(200, "application/json", okView),
			},
			wantWaits: []time.Duration{30 * time.Second},
		},
		{
			name:      "a 502 HTML page every time: backoff doubles, then the error",
			answers:   []func(http.ResponseWriter){answer(502, "text/html", "<html>Bad Gateway</html>")},
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
			wantErr:   &client.Error{Status: 502, Title: "Bad Gateway"},
		},
		{
			name:    "a gateway 403 is not retried",
			answers: []func(http.ResponseWriter){answer(403, "application/json", `{"message":"Forbidden"}`)},
			wantErr: &client.Error{Status: 403, Title: "Forbidden", Detail: "Forbidden"},
		},
		{
			name:      "a 500 internal problem is retried, then returned",
			answers:   []func(http.ResponseWriter){answer(500, "application/problem+json", `{"type":"t","title":"Internal error","status":500,"detail":"logged","code":"internal"}`)},
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
			wantErr:   &client.Error{Status: 500, Code: "internal", Type: "t", Title: "Internal error", Detail: "logged"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clientServer(t, tt.answers)
			c, sl := newClient(t, srv.URL, "tenant-a")
			s, err := c.Get(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "")
			if tt.wantErr == nil {
				if err != nil || s.View.Version != 2 {
					t.Fatalf("Get = %+v, %v", s, err)
				}
			} else if e := apiError(t, err); *e != *tt.wantErr {
				t.Fatalf("error = %+v, want %+v", e, tt.wantErr)
			}
			if got := sl.Waits(); !slices.Equal(got, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", got, tt.wantWaits)
			}
			if srv.count() != len(tt.wantWaits)+1 {
				t.Errorf("%d tries, want %d", srv.count(), len(tt.wantWaits)+1)
			}
		})
	}
}

func TestNetworkErrors(t *testing.T) {
	srv := clientServer(t, []func(http.ResponseWriter){answer(200, "application/json", okView)})
	refused := func(n int) client.Doer {
		var mu sync.Mutex
		return doerFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if n > 0 {
				n--
				return nil, &netOpError{syscall.ECONNREFUSED}
			}
			return http.DefaultClient.Do(r)
		})
	}

	c, sl := newClient(t, srv.URL, "tok-SECRET", func(c *client.Config) { c.HTTP = refused(2) })
	if _, err := c.Cancel(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa"); err != nil {
		t.Fatalf("Cancel after two refusals: %v", err)
	}
	if got := sl.Waits(); !slices.Equal(got, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Errorf("waits = %v", got)
	}

	c, _ = newClient(t, srv.URL, "tok-SECRET", func(c *client.Config) { c.HTTP = refused(100) })
	_, err := c.Cancel(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	var ne *client.NetworkError
	if !errors.As(err, &ne) || ne.Tries != 4 || ne.Method != "POST" || ne.Path != "/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel" {
		t.Fatalf("err = %#v", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the cause is lost: %v", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error shows the token: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	c, sl = newClient(t, srv.URL, "t", func(c *client.Config) { c.HTTP = refused(100) })
	sl.steps = []func(){cancel}
	_, err = c.Get(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "")
	if !errors.Is(err, context.Canceled) || errors.As(err, &ne) {
		t.Errorf("cancelled while retrying: %v, want context.Canceled and no NetworkError", err)
	}
}

type netOpError struct{ err error }

func (e *netOpError) Error() string { return "dial tcp 127.0.0.1:1: " + e.err.Error() }
func (e *netOpError) Unwrap() error { return e.err }

func TestRequestsGoUnderTheBasePath(t *testing.T) {
	srv := clientServer(t, []func(http.ResponseWriter){answer(200, "application/json", okView)})
	c, _ := newClient(t, srv.URL+"/prod/", "t", func(c *client.Config) { c.UserAgent = "ops-tool/1" })
	if _, err := c.Get(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "job/../x", ""); err != nil {
		t.Fatal(err)
	}
	want := []string{"/prod/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "/prod/jobs/job%2F..%2Fx"}
	if !slices.Equal(srv.paths, want) || srv.agents[0] != "ops-tool/1" {
		t.Errorf("paths %q agents %q", srv.paths, srv.agents)
	}
}

func TestUnexpectedSuccessBodies(t *testing.T) {
	srv := clientServer(t, []func(http.ResponseWriter){answer(200, "text/html", "<html>captive portal</html>")})
	c, _ := newClient(t, srv.URL, "t")
	if _, err := c.Get(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""); err == nil || !strings.Contains(err.Error(), "decode the job view") {
		t.Errorf("err = %v", err)
	}
	srv = clientServer(t, []func(http.ResponseWriter){answer(201, "application/json", okView)})
	c, _ = newClient(t, srv.URL, "t")
	if _, err := c.Cancel(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa"); apiError(t, err).Status != 201 {
		t.Errorf("err = %v", err)
	}
}
