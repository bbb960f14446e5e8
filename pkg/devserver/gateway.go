// Package devserver runs the real Lambda handlers on a developer machine:
// an HTTP listener that turns requests into API Gateway HTTP API (payload
// v2) events, and an emulator of Lambda's SQS event source mapping that
// long-polls the queue and invokes the worker with batches exactly as Lambda
// does. Emulators (kumo) do not run Lambda event source mappings, so this is
// how the same handlers are exercised end to end without AWS. Both are
// meant to be no kinder than AWS: what API Gateway and Lambda refuse,
// answer themselves or cut short, they refuse, answer or cut short too.
package devserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// APIHandler is the API Lambda's handler.
type APIHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// API Gateway's and Lambda's limits that a request meets before the
// function runs:
//   - maxGatewayBody: an HTTP API's payload quota, 10 MB
//     (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html);
//   - maxInvokePayload: Lambda's synchronous invocation payload, 6 MB, of
//     the whole event JSON (a binary body is base64 in it)
//     (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html);
//   - maxIntegrationTimeout: how long an HTTP API waits for its
//     integration, 30 s at most (the same quotas page).
const (
	maxGatewayBody        = 10 << 20
	maxInvokePayload      = 6 << 20
	maxIntegrationTimeout = 30 * time.Second
)

var bearer = regexp.MustCompile(`^Bearer ([A-Za-z0-9._:@-]{1,128})$`)

// Gateway is an http.Handler standing in for an HTTP API whose routes all
// have a JWT authorizer (the stack's default authorizer):
// `Authorization: Bearer <tenant>` becomes the JWT claim `sub`, so tenant
// isolation is exercised locally exactly as in AWS, and a request without
// such a token is refused before the function, as API Gateway does.
type Gateway struct {
	Handler APIHandler
	// Timeout is the API function's timeout: an invocation still running
	// then is killed by Lambda and API Gateway answers the function's
	// failure, 500.
	Timeout time.Duration
	// IntegrationTimeout is how long API Gateway waits for the function;
	// zero or more than 30 s means HTTP API's 30 s. When it ends first, API
	// Gateway answers 503 and the function may still be running.
	IntegrationTimeout time.Duration
	Logger             *slog.Logger
	// MemoryMB is the API function's configured memory, which Usage bills.
	MemoryMB int
	seq      atomic.Int64
	meter    meter
}

// Usage is what the API function's invocations so far would be billed
// for by Lambda (each runs until it answers or its timeout ends).
func (g *Gateway) Usage() Usage { return g.meter.usage() }

// gatewayError writes one of API Gateway's own answers: JSON with a
// "message", never the API's problem+json.
func gatewayError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"message":"`+message+`"}`)
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxGatewayBody+1))
	if err != nil {
		gatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > maxGatewayBody {
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	path, ok := deliveredPath(r.URL.Path)
	if !ok {
		gatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	m := bearer.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		// The JWT authorizer refuses a missing or unusable token itself.
		w.Header().Set("Www-Authenticate", `Bearer scope="" error="invalid_token" error_description="no token, or not one this emulator accepts (Bearer <tenant>)"`)
		gatewayError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	ev := g.event(r, path, m[1], body)
	if size, err := payloadSize(ev); err != nil || size > maxInvokePayload {
		g.Logger.Warn("gateway: the event is over Lambda's 6 MB invocation payload; API Gateway refuses it with 413", "bytes", size)
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Too Long")
		return
	}
	resp, status := g.invoke(r.Context(), ev)
	if status != 0 {
		gatewayError(w, status, http.StatusText(status))
		return
	}
	g.write(w, resp)
}

// invoke runs the handler as Lambda and API Gateway do: it is given the
// function's timeout; a panic or an error is the function failing (500);
// an answer that comes after the function's timeout (500) or after the
// integration timeout (503) is dropped. A non-zero status is API
// Gateway's own answer.
func (g *Gateway) invoke(parent context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, int) {
	type result struct {
		resp events.APIGatewayV2HTTPResponse
		err  error
	}
	ctx, cancel := context.WithTimeout(parent, g.Timeout)
	defer cancel()
	done := make(chan result, 1) // a late handler's send never blocks
	start := time.Now()
	go func() {
		defer func() { g.meter.record(time.Since(start), g.Timeout, g.MemoryMB) }()
		defer func() {
			if v := recover(); v != nil {
				g.Logger.Error("gateway: the API handler panicked; API Gateway answers 500",
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()), "request_id", ev.RequestContext.RequestID)
				done <- result{err: fmt.Errorf("panic: %v", v)}
			}
		}()
		resp, err := g.Handler(ctx, ev)
		done <- result{resp, err}
	}()
	wait, status, what := g.Timeout, http.StatusInternalServerError, "function timeout"
	if it := g.integrationTimeout(); it < wait {
		wait, status, what = it, http.StatusServiceUnavailable, "integration timeout"
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			g.Logger.Error("gateway: the API handler failed; API Gateway answers 500", "err", r.err, "request_id", ev.RequestContext.RequestID)
			return r.resp, http.StatusInternalServerError
		}
		return r.resp, 0
	case <-timer.C:
		g.Logger.Error("gateway: the API handler overran the "+what+"; API Gateway answers itself and the late answer is dropped",
			"timeout", wait.String(), "status", status, "request_id", ev.RequestContext.RequestID)
		return events.APIGatewayV2HTTPResponse{}, status
	}
}

func (g *Gateway) integrationTimeout() time.Duration {
	if g.IntegrationTimeout <= 0 || g.IntegrationTimeout > maxIntegrationTimeout {
		return maxIntegrationTimeout
	}
	return g.IntegrationTimeout
}

// write sends the function's answer.
func (g *Gateway) write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			g.Logger.Error("gateway: the API handler returned bad base64", "err", err)
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// deliveredPath is the rawPath an HTTP API hands its integration for a
// request whose path decodes once to decoded: cut at a "?" the decoding
// produced, then decoded a second time; a path whose second decoding fails
// is refused (400). Live captures of this behaviour (HTTP APIs only; REST
// APIs, ALB and function URLs keep the path encoded) are published in
// hotsock/voker, vokerhttp/testdata/ingress-paths.json.
func deliveredPath(decoded string) (string, bool) {
	decoded, _, _ = strings.Cut(decoded, "?")
	p, err := url.PathUnescape(decoded)
	return p, err == nil
}

// payloadSize is the size of the event as Lambda receives it: JSON.
func payloadSize(ev events.APIGatewayV2HTTPRequest) (int, error) {
	b, err := json.Marshal(ev)
	return len(b), err
}

func (g *Gateway) event(r *http.Request, path, tenant string, body []byte) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              "$default",
		RawPath:               path,
		RawQueryString:        r.URL.RawQuery,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:  "$default",
			AccountID: "000000000000",
			Stage:     "$default",
			RequestID: "local-" + strconv.FormatInt(g.seq.Add(1), 10),
			Time:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": tenant}},
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}
