package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// asRole is the assumed-role fixture as role roleID (named name) in
// session.
func asRole(t *testing.T, roleID, name, session string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	ev := fixture(t, "request-iam-role.json")
	iam := *ev.RequestContext.Authorizer.IAM
	iam.UserID, iam.CallerID = roleID+":"+session, roleID+":"+session
	iam.UserARN = "arn:aws:sts::123456789012:assumed-role/" + name + "/" + session
	iam.AccessKey = "ASIA" + session
	a := *ev.RequestContext.Authorizer
	a.IAM = &iam
	ev.RequestContext.Authorizer = &a
	return ev
}

func TestTenantOf(t *testing.T) {
	iamOnly := fixture(t, "request-iam.json")
	iamOnly.RequestContext.Authorizer.IAM.UserARN = ""
	callerOnly := asRole(t, "AROAEXAMPLEROLEID0001", "report-writer", "s9")
	callerOnly.RequestContext.Authorizer.IAM.UserID = ""
	noAccount := fixture(t, "request-iam.json")
	noAccount.RequestContext.Authorizer.IAM.AccountID = ""
	root := fixture(t, "request-iam.json")
	root.RequestContext.Authorizer.IAM.UserID = "123456789012"
	root.RequestContext.Authorizer.IAM.UserARN = "arn:aws:iam::123456789012:root"
	federated := fixture(t, "request-iam.json")
	federated.RequestContext.Authorizer.IAM.UserID = "123456789012:Bob"
	federated.RequestContext.Authorizer.IAM.UserARN = "arn:aws:sts::123456789012:federated-user/Bob"
	cognito := asRole(t, "AROAEXAMPLECOGNITO001", "app-users", "CognitoIdentityCredentials")
	cognito.RequestContext.Authorizer.IAM.CognitoIdentity.IdentityID = "eu-west-1:0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"
	cognito.RequestContext.Authorizer.IAM.CognitoIdentity.IdentityPoolID = "eu-west-1:pool"
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
		{"iam user", fixture(t, "request-iam.json"), "iam:123456789012:AIDAEXAMPLE"},
		{"iam user without an ARN", iamOnly, "iam:123456789012:AIDAEXAMPLE"},
		{"assumed role", fixture(t, "request-iam-role.json"), "iam:123456789012:AROAEXAMPLEROLEID0001"},
		{"assumed role, another session", asRole(t, "AROAEXAMPLEROLEID0001", "report-writer", "session-2"), "iam:123456789012:AROAEXAMPLEROLEID0001"},
		{"assumed role, caller id only", callerOnly, "iam:123456789012:AROAEXAMPLEROLEID0001"},
		{"role recreated under the same name", asRole(t, "AROAEXAMPLEROLEID0002", "report-writer", "session-1"), "iam:123456789012:AROAEXAMPLEROLEID0002"},
		{"root", root, "iam:123456789012:123456789012"},
		{"federated user", federated, "iam:123456789012:123456789012:Bob"},
		{"cognito identity", cognito, "iam:cognito:eu-west-1:0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"},
		{"iam without an account", noAccount, ""},
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
		"request-iam.json":               "iam:123456789012:AIDAEXAMPLE",
		"request-iam-role.json":          "iam:123456789012:AROAEXAMPLEROLEID0001",
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

// TestIAMRetryAcrossSessionsIsOneJob: a client on an assumed role whose
// credentials refresh under a new session name retries its create with
// the same Idempotency-Key: it is the same tenant, so the same job (one
// record, no second generation to pay for). Another role never sees it,
// and neither does a role deleted and recreated under the same name (IAM
// gives it a new unique id: it is another principal).
func TestIAMRetryAcrossSessionsIsOneJob(t *testing.T) {
	e := newEnv(t)
	create := func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		ev.RawPath, ev.RequestContext.HTTP.Method = "/jobs", "POST"
		ev.Headers["idempotency-key"], ev.Body = "report-2026-01", simpleBody
		return e.do(t, ev)
	}
	first := create(asRole(t, "AROAEXAMPLEROLEID0001", "report-writer", "botocore-session-1700000000"))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first create: %d %s", first.StatusCode, first.Body)
	}
	id := decodeView(t, first).ID
	retry := create(asRole(t, "AROAEXAMPLEROLEID0001", "report-writer", "botocore-session-1700003600"))
	if retry.StatusCode != http.StatusOK || retry.Headers["Idempotent-Replayed"] != "true" || decodeView(t, retry).ID != id {
		t.Fatalf("retry from a new session: %d %v %s", retry.StatusCode, retry.Headers, retry.Body)
	}
	if e.store.Len() != 1 {
		t.Fatalf("%d records after a retry from a new session, want 1", e.store.Len())
	}

	for name, other := range map[string]events.APIGatewayV2HTTPRequest{
		"another role":               asRole(t, "AROAEXAMPLEOTHERROLE1", "auditor", "s1"),
		"the role recreated by name": asRole(t, "AROAEXAMPLEROLEID0002", "report-writer", "botocore-session-1700000000"),
	} {
		get := other
		get.RawPath, get.RequestContext.HTTP.Method = "/jobs/"+id, "GET"
		wantProblem(t, e.do(t, get), http.StatusNotFound, wire.CodeNotFound, "")
		list := other
		list.RawPath, list.RequestContext.HTTP.Method = "/jobs", "GET"
		if b := decodeList(t, e.do(t, list)); len(b.Jobs) != 0 {
			t.Errorf("%s lists %d jobs of another role", name, len(b.Jobs))
		}
		cancel := other
		cancel.RawPath, cancel.RequestContext.HTTP.Method = "/jobs/"+id+"/cancel", "POST"
		wantProblem(t, e.do(t, cancel), http.StatusNotFound, wire.CodeNotFound, "")
		if resp := create(other); resp.StatusCode != http.StatusAccepted || decodeView(t, resp).ID == id {
			t.Errorf("%s: the same key is its own job: %d %s", name, resp.StatusCode, resp.Body)
		}
	}
	if j, _ := e.store.Get(t.Context(), id); j.State != job.Queued || j.Version != 1 {
		t.Errorf("another role changed the job: %+v", j)
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
		p := wantProblem(t, e.do(t, ev), http.StatusUnauthorized, wire.CodeUnauthorized, "")
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

// TestATenantWithControlCharactersIs401: the tenant reaches operators'
// terminals (the CLI's tables, where an escape sequence rewrites the
// screen) and pages, so an identity holding control characters, bidi
// overrides, zero-width or line-breaking characters, or bytes that are
// not UTF-8 is refused as unusable before any store call, on every
// route (issue O item 5.4). Spaces and letters beyond ASCII are a tenant
// like any other.
func TestATenantWithControlCharactersIs401(t *testing.T) {
	e := newEnv(t)
	e.h = e.handler(&stubStore{}) // any store call panics
	for _, bad := range []string{"evil\x1b[2J", "a\x00b", "tab\there", "line\nbreak", "del\x7f", "csi\u009b31m", "rtl\u202eexe.txt",
		"zero\u200bwidth", "line\u2028sep", "bom\ufeff", "not utf-8 \xff"} {
		for _, ev := range []events.APIGatewayV2HTTPRequest{
			asTenant(createReq(t, "k", simpleBody), bad),
			asTenant(listReq(t, ""), bad),
			asTenant(request(t, "GET", "/jobs/"+job.NewID("jwt:"+bad, "k"), ""), bad),
		} {
			p := wantProblem(t, e.do(t, ev), http.StatusUnauthorized, wire.CodeUnauthorized, "")
			if !strings.Contains(p.Detail, "control") || strings.Contains(p.Detail, bad) {
				t.Errorf("%q: detail %q", bad, p.Detail)
			}
		}
	}
	// A Lambda authorizer's tenant is held to the same rule.
	ev := createReq(t, "k", simpleBody)
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"tenant": "x\x1b]0;owned\x07"}}
	wantProblem(t, e.do(t, ev), http.StatusUnauthorized, wire.CodeUnauthorized, "")

	e = newEnv(t)
	for i, ok := range []string{"tenant a", "Zoë", "用户", "a\u00a0b", "emoji 🙂"} {
		if resp := e.do(t, asTenant(createReq(t, fmt.Sprint("k", i), simpleBody), ok)); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%q: %d %s", ok, resp.StatusCode, resp.Body)
		}
	}
}
