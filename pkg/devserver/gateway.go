// Package devserver runs the real Lambda handlers on a developer machine:
// an HTTP listener that turns requests into API Gateway HTTP API (payload
// v2) events, and an emulator of Lambda's SQS event source mapping that
// long-polls the queue and invokes the worker with batches exactly as Lambda
// does. Emulators (kumo) do not run Lambda event source mappings, so this is
// how the same handlers are exercised end to end without AWS.
package devserver

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// APIHandler is the API Lambda's handler.
type APIHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// maxGatewayBody is API Gateway's own payload limit; bigger requests never
// reach the function.
const maxGatewayBody = 10 << 20

var bearer = regexp.MustCompile(`^Bearer ([A-Za-z0-9._:@-]{1,128})$`)

// Gateway is an http.Handler standing in for API Gateway with a JWT
// authorizer: `Authorization: Bearer <tenant>` becomes the JWT claim `sub`,
// so tenant isolation is exercised locally exactly as in AWS.
type Gateway struct {
	Handler APIHandler
	Timeout time.Duration
	Logger  *slog.Logger
	seq     atomic.Int64
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxGatewayBody+1))
	if err != nil {
		http.Error(w, `{"message":"Bad Request"}`, http.StatusBadRequest)
		return
	}
	if len(body) > maxGatewayBody {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, `{"message":"Request Entity Too Large"}`)
		return
	}
	ev := g.event(r, body)
	ctx, cancel := context.WithTimeout(r.Context(), g.Timeout)
	defer cancel()
	resp, err := g.Handler(ctx, ev)
	if err != nil {
		// What API Gateway answers when the function fails.
		g.Logger.Error("api handler returned an error", "err", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"Internal Server Error"}`)
		return
	}
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
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			g.Logger.Error("api handler returned bad base64", "err", err)
			w.WriteHeader(http.StatusInternalServerError)
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

func (g *Gateway) event(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
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
		RawPath:               r.URL.EscapedPath(),
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
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
		},
	}
	if m := bearer.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": m[1]}},
		}
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}
