package devserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func TestGatewayBuildsV2EventsAndWritesResponses(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	g := &Gateway{Timeout: time.Second, Logger: slog.New(slog.DiscardHandler),
		Handler: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = ev
			return events.APIGatewayV2HTTPResponse{StatusCode: 202, Headers: map[string]string{"Location": "/jobs/x"}, Body: `{"ok":true}`}, nil
		}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/jobs?a=1", strings.NewReader("\xff\xfe binary"))
	req.Header.Set("Authorization", "Bearer tenant-a")
	req.Header.Set("Idempotency-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || resp.Header.Get("Location") != "/jobs/x" || string(body) != `{"ok":true}` {
		t.Fatalf("response: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got.RawPath != "/jobs" || got.RawQueryString != "a=1" || got.RequestContext.HTTP.Method != "POST" || got.Headers["idempotency-key"] != "k" {
		t.Fatalf("event: %+v", got)
	}
	if got.RequestContext.Authorizer == nil || got.RequestContext.Authorizer.JWT.Claims["sub"] != "tenant-a" {
		t.Fatalf("the bearer token must become the JWT sub claim: %+v", got.RequestContext.Authorizer)
	}
	if !got.IsBase64Encoded {
		t.Fatal("a non-UTF-8 body must be base64-encoded, as API Gateway does")
	}

	// Without a usable bearer token the authorizer refuses the request
	// itself: the handler is never invoked (see TestGatewayAuthorizer).
	for _, auth := range []string{"", "Basic abc", "Bearer ", "Bearer a b", "Bearer " + strings.Repeat("x", 200)} {
		got = events.APIGatewayV2HTTPRequest{}
		req, _ := http.NewRequest("GET", srv.URL+"/jobs/x", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || got.RawPath != "" {
			t.Errorf("Authorization %q: status %d, handler saw %q", auth, resp.StatusCode, got.RawPath)
		}
	}
}
