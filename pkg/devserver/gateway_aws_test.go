package devserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// logBuffer collects JSON log lines for assertions on their level.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// errorLogged reports whether an ERROR line holds every one of words.
func (b *logBuffer) errorLogged(words ...string) bool {
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.Contains(line, `"level":"ERROR"`) {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

type answer struct {
	status int
	header http.Header
	body   string
}

// serve runs g and sends one request with a tenant's bearer token unless
// the caller sets Authorization itself.
func serve(t *testing.T, g *Gateway, method, path string, body io.Reader, header map[string]string) answer {
	t.Helper()
	srv := httptest.NewServer(g)
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tenant-a")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// TestGatewayDropsALateAnswer: an invocation that outlives the API
// function's timeout is killed by Lambda, and API Gateway answers the
// function's failure itself (500 {"message":"Internal Server Error"},
// https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html);
// one that outlives HTTP API's 30-second integration timeout
// (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html)
// is answered 503 {"message":"Service Unavailable"} while the function may
// still run (the report in anomalyco/sst#2232). Either way the handler's
// late answer never reaches the client, and the emulator says so loudly.
func TestGatewayDropsALateAnswer(t *testing.T) {
	for name, c := range map[string]struct {
		timeout, integration time.Duration
		status               int
		body                 string
	}{
		"function timeout":    {timeout: 100 * time.Millisecond, status: 500, body: `{"message":"Internal Server Error"}`},
		"integration timeout": {timeout: 2 * time.Second, integration: 100 * time.Millisecond, status: 503, body: `{"message":"Service Unavailable"}`},
	} {
		t.Run(name, func(t *testing.T) {
			logs := &logBuffer{}
			returned := make(chan struct{})
			// The handler answers only once the client has its answer,
			// whatever ctx says: a gateway that waited for it would wait
			// until the fallback, 10 s on, and the client would see its
			// answer come after the handler's.
			answered := make(chan struct{})
			var release sync.Once
			fallback := time.AfterFunc(10*time.Second, func() { release.Do(func() { close(answered) }) })
			defer fallback.Stop()
			var late atomic.Bool
			g := &Gateway{Timeout: c.timeout, IntegrationTimeout: c.integration, Logger: logs.logger(),
				Handler: func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					defer close(returned)
					<-answered
					late.Store(true)
					return events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: `{"late":true}`}, nil
				}}
			a := serve(t, g, "POST", "/jobs", strings.NewReader("{}"), nil)
			if late.Load() {
				t.Errorf("the handler had answered before the client: the gateway waited for the late handler")
			}
			release.Do(func() { close(answered) })
			if a.status != c.status || a.body != c.body || a.header.Get("Content-Type") != "application/json" {
				t.Fatalf("answer %d %q %v, want %d %s", a.status, a.body, a.header, c.status, c.body)
			}
			<-returned
			if !logs.errorLogged("timeout") {
				t.Errorf("the overrun is not logged as an error:\n%s", logs)
			}
		})
	}
}

// TestGatewayPanicIsAFunctionError: a panic that escapes the handler fails
// the invocation (aws-lambda-go reports it as the function's error), and
// API Gateway answers 500 itself.
func TestGatewayPanicIsAFunctionError(t *testing.T) {
	logs := &logBuffer{}
	g := &Gateway{Timeout: time.Second, Logger: logs.logger(),
		Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			panic("boom")
		}}
	a := serve(t, g, "GET", "/jobs", nil, nil)
	if a.status != 500 || a.body != `{"message":"Internal Server Error"}` {
		t.Fatalf("answer %d %q", a.status, a.body)
	}
	if !logs.errorLogged("panic", "boom") {
		t.Errorf("the panic is not logged as an error:\n%s", logs)
	}
}

// TestGatewayDecodesRawPath: HTTP APIs deliver rawPath percent-decoded
// (REST APIs, ALB and function URLs keep it encoded), truncated at a
// decoded "?", decoded a second time, and refuse with 400 a path whose
// second decoding fails. The cases are live captures published in
// hotsock/voker (vokerhttp/testdata/ingress-paths.json, recorded with its
// examples/aws-ingress-probe). /jobs/ID%2Fcancel is the cancel route.
func TestGatewayDecodesRawPath(t *testing.T) {
	for sent, want := range map[string]string{
		"/capture/plain":                                "/capture/plain",
		"/capture/space%20value":                        "/capture/space value",
		"/capture/question%3Fvalue":                     "/capture/question",
		"/capture/hash%23value":                         "/capture/hash#value",
		"/capture/slash%2Fvalue":                        "/capture/slash/value",
		"/capture/unicode-%CE%BB-%E4%B8%96%E7%95%8C":    "/capture/unicode-λ-世界",
		"/capture/literal%252Fvalue":                    "/capture/literal/value",
		"/capture/literal%253Fvalue":                    "/capture/literal?value",
		"/capture/literal%2525value":                    "/capture/literal%value",
		"/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa%2Fcancel": "/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel",
		"/capture/percent%25done":                       "", // refused
	} {
		var got events.APIGatewayV2HTTPRequest
		called := false
		g := &Gateway{Timeout: time.Second, Logger: slog.New(slog.DiscardHandler),
			Handler: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				got, called = ev, true
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}}
		a := serve(t, g, "GET", sent+"?marker=a%3Fb", nil, nil)
		if want == "" {
			if a.status != 400 || a.body != `{"message":"Bad Request"}` || called {
				t.Errorf("%s: answer %d %q, handler called %v; want API Gateway's 400", sent, a.status, a.body, called)
			}
			continue
		}
		if a.status != 200 || got.RawPath != want || got.RequestContext.HTTP.Path != want || got.RawQueryString != "marker=a%3Fb" {
			t.Errorf("%s: status %d, rawPath %q, http.path %q, query %q; want %q", sent, a.status, got.RawPath,
				got.RequestContext.HTTP.Path, got.RawQueryString, want)
		}
	}
}

// TestGatewayRefusesAnEventOverLambdasLimit: Lambda takes at most 6 MB
// (6,291,456 bytes) of synchronous invocation payload
// (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html),
// and the payload is the whole event: a binary body is base64-encoded in
// it, a third larger. API Gateway answers 413 itself and the function is
// never invoked (koki-develop/lgtm-generator#10 shows {"message": "Request
// Too Long"} for it); a body over HTTP API's own 10 MB quota is refused
// before that, 413 "Request Entity Too Large".
func TestGatewayRefusesAnEventOverLambdasLimit(t *testing.T) {
	for name, c := range map[string]struct {
		body   []byte
		status int
		msg    string
	}{
		"text under 6 MB":       {body: bytes.Repeat([]byte("a"), 6<<20-4096), status: 200},
		"text over 6 MB":        {body: bytes.Repeat([]byte("a"), 6<<20+1), status: 413, msg: `{"message":"Request Too Long"}`},
		"binary, base64 over 6": {body: bytes.Repeat([]byte{0xff}, 5<<20), status: 413, msg: `{"message":"Request Too Long"}`},
		"over 10 MB":            {body: bytes.Repeat([]byte("a"), 10<<20+1), status: 413, msg: `{"message":"Request Entity Too Large"}`},
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int64
			g := &Gateway{Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
				Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					calls.Add(1)
					return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
				}}
			a := serve(t, g, "POST", "/jobs", bytes.NewReader(c.body), nil)
			if a.status != c.status || (c.msg != "" && a.body != c.msg) {
				t.Fatalf("answer %d %q, want %d %s", a.status, a.body, c.status, c.msg)
			}
			if want := int64(0); c.status == 413 && calls.Load() != want {
				t.Errorf("the handler was invoked %d times for a refused payload", calls.Load())
			}
		})
	}
}

// TestGatewayAuthorizer: every route of the stack has an authorizer (the
// HTTP API's default), so a request without a usable token is answered by
// API Gateway itself, 401 {"message":"Unauthorized"} with a
// www-authenticate header, and never reaches the function
// (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-jwt.html).
func TestGatewayAuthorizer(t *testing.T) {
	for _, auth := range []string{"", "Basic abc", "Bearer ", "Bearer a b", "Bearer " + strings.Repeat("x", 200)} {
		var calls atomic.Int64
		g := &Gateway{Timeout: time.Second, Logger: slog.New(slog.DiscardHandler),
			Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				calls.Add(1)
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}}
		for _, path := range []string{"/jobs", "/nope"} {
			a := serve(t, g, "POST", path, strings.NewReader("{}"), map[string]string{"Authorization": auth})
			if a.status != 401 || a.body != `{"message":"Unauthorized"}` || !strings.HasPrefix(a.header.Get("Www-Authenticate"), "Bearer") {
				t.Errorf("%q %s: answer %d %q %v", auth, path, a.status, a.body, a.header)
			}
		}
		if calls.Load() != 0 {
			t.Errorf("%q: the handler was invoked %d times", auth, calls.Load())
		}
	}
}
