package apispec

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// CheckEvent holds one API Gateway HTTP API exchange to the default
// document: the event as the API function receives it and the answer it
// gave, read as the HTTP request and response API Gateway turns them
// into.
func CheckEvent(ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) error {
	v, err := Default()
	if err != nil {
		return err
	}
	return v.Check(eventExchange(ev, resp))
}

func eventExchange(ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) Exchange {
	path := ev.RawPath
	// A named stage is part of the server's URL, not of the document's
	// paths (the handler strips it the same way).
	if st := ev.RequestContext.Stage; st != "" && st != "$default" {
		if rest, ok := strings.CutPrefix(path, "/"+st); ok && strings.HasPrefix(rest, "/") {
			path = rest
		}
	}
	req := &http.Request{
		Method: ev.RequestContext.HTTP.Method,
		URL:    &url.URL{Scheme: "https", Host: "api.test", Path: path, RawQuery: ev.RawQueryString},
		Header: http.Header{},
		Host:   "api.test",
	}
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	x := Exchange{
		Request: req, Body: decoded(ev.Body, ev.IsBase64Encoded),
		Authenticated: authorizedBy(ev.RequestContext.Authorizer),
		Status:        resp.StatusCode, Header: http.Header{},
		ResponseBody: decoded(resp.Body, resp.IsBase64Encoded),
	}
	if x.Status == 0 {
		x.Status = http.StatusOK // as API Gateway reads a missing status
	}
	for k, v := range resp.Headers {
		x.Header.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			x.Header.Add(k, v)
		}
	}
	return x
}

// authorizedBy: the function only ever sees a request API Gateway's
// authorizer let through, and the event says which one did.
func authorizedBy(a *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) func(string) bool {
	return func(scheme string) bool {
		if a == nil {
			return false
		}
		switch scheme {
		case "jwt":
			return a.JWT != nil
		case "sigv4":
			return a.IAM != nil
		case "lambdaAuthorizer":
			return len(a.Lambda) > 0
		}
		return false
	}
}

func decoded(body string, b64 bool) []byte {
	if !b64 {
		return []byte(body)
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return []byte(body) // what the API refuses as bad base64
	}
	return b
}
