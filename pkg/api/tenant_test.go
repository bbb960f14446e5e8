package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestTenantOf(t *testing.T) {
	iamOnly := fixture(t, "request-iam.json")
	iamOnly.RequestContext.Authorizer.IAM.UserARN = ""
	both := fixture(t, "request-lambda-authorizer.json")
	both.RequestContext.Authorizer.JWT = &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
		Claims: map[string]string{"sub": "from-jwt"}}
	noSub := fixture(t, "request-lambda-authorizer.json")
	noSub.RequestContext.Authorizer.JWT = &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
		Claims: map[string]string{"iss": "x"}}
	notString := fixture(t, "request-lambda-authorizer.json")
	notString.RequestContext.Authorizer.Lambda["tenant"] = 42
	tests := []struct {
		name string
		ev   events.APIGatewayV2HTTPRequest
		want string
	}{
		{"jwt", fixture(t, "request-jwt.json"), "jwt:tenant-a"},
		{"iam user arn", fixture(t, "request-iam.json"), "iam:arn:aws:iam::123456789012:user/alice"},
		{"iam account and caller", iamOnly, "iam:123456789012:AIDAEXAMPLE"},
		{"lambda authorizer", fixture(t, "request-lambda-authorizer.json"), "lambda:tenant-lambda"},
		{"jwt before lambda", both, "jwt:from-jwt"},
		{"jwt without sub", noSub, "lambda:tenant-lambda"},
		{"lambda tenant not a string", notString, ""},
		{"no authorizer", fixture(t, "request-no-authorizer.json"), ""},
	}
	for _, tc := range tests {
		if got := tenantOf(tc.ev.RequestContext); got != tc.want {
			t.Errorf("%s: tenant %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTenantsFromEveryAuthorizerCreate(t *testing.T) {
	for name, want := range map[string]string{
		"request-iam.json":               "iam:arn:aws:iam::123456789012:user/alice",
		"request-lambda-authorizer.json": "lambda:tenant-lambda",
	} {
		e := newEnv(t)
		ev := fixture(t, name)
		ev.Headers["idempotency-key"], ev.Body = "k", simpleBody
		resp := e.do(t, ev)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: status %d, body %s", name, resp.StatusCode, resp.Body)
		}
		if id := decodeView(t, resp).ID; id != job.NewID(want, "k") {
			t.Errorf("%s: id %s is not the id of tenant %s", name, id, want)
		}
	}
}

func TestTenantNamespacesNeverCollide(t *testing.T) {
	iam := fixture(t, "request-iam.json")
	jwt := fixture(t, "request-jwt.json")
	jwt.RequestContext.Authorizer.JWT.Claims["sub"] = iam.RequestContext.Authorizer.IAM.UserARN
	if a, b := tenantOf(iam.RequestContext), tenantOf(jwt.RequestContext); a == b || a == "" {
		t.Fatalf("a JWT subject spelled like an IAM ARN got the IAM principal's tenant %q", a)
	}
}

// TestOverlongTenantIs401: the tenant is the tenant index's partition key,
// which DynamoDB caps at 2048 bytes; an identity that long (a Lambda
// authorizer passing through what a caller sent, an IdP with long
// subjects) would make the create a 413 about the input and the list a 503.
// It is refused as an unusable identity before any store call.
func TestOverlongTenantIs401(t *testing.T) {
	e := newEnv(t)
	e.h = e.handler(&stubStore{}) // any store call panics
	long := strings.Repeat("s", maxTenantBytes)
	for _, ev := range []events.APIGatewayV2HTTPRequest{
		asTenant(createReq(t, "k", simpleBody), long),
		asTenant(listReq(t, ""), long),
		asTenant(request(t, "GET", "/jobs/"+job.NewID("jwt:"+long, "k"), ""), long),
	} {
		p := wantProblem(t, e.do(t, ev), http.StatusUnauthorized, job.CodeUnauthorized, "")
		if !strings.Contains(p.Detail, "too long") {
			t.Errorf("detail %q", p.Detail)
		}
	}
	// At the bound (with its "jwt:" namespace) it is a tenant like any other.
	e = newEnv(t)
	ok := strings.Repeat("s", maxTenantBytes-len("jwt:"))
	if resp := e.do(t, asTenant(createReq(t, "k", simpleBody), ok)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("tenant at the bound: %d %s", resp.StatusCode, resp.Body)
	}
}
