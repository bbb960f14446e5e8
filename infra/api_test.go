package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

func routes(t *testing.T, s *synthesized) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
		p := r["Properties"].(map[string]any)
		out[p["RouteKey"].(string)] = p
	}
	return out
}

// contractRoutes are the operations docs/openapi.yaml declares under
// paths, as API Gateway route keys ("GET /jobs"). Read line by line (two
// spaces before a path, four before its method): the contract is written
// that way, and the infra module stays free of a YAML parser.
func contractRoutes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pathLine, methodLine := regexp.MustCompile(`^  (/\S*):$`), regexp.MustCompile(`^    (get|put|post|delete|patch):$`)
	var out []string
	inPaths, path := false, ""
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case line == "paths:":
			inPaths = true
		case line != "" && line[0] != ' ':
			inPaths = false
		case !inPaths:
		case pathLine.MatchString(line):
			path = pathLine.FindStringSubmatch(line)[1]
		case methodLine.MatchString(line):
			out = append(out, strings.ToUpper(methodLine.FindStringSubmatch(line)[1])+" "+path)
		}
	}
	if len(out) < 6 {
		t.Fatalf("docs/openapi.yaml declares %v: fewer operations than the API serves, so the reading above broke", out)
	}
	return out
}

// Every operation of the contract has its route, and the stack has no
// route the contract does not declare (besides $default, which sends
// every other request to the function for its 404 problem).
func TestHTTPAPIRoutesUseIAM(t *testing.T) {
	s := defaults(t)
	got := routes(t, s)
	want := append(contractRoutes(t), "$default")
	if !equalSets(sortedKeys(got), want) {
		t.Fatalf("routes %v, want the contract's %v", sortedKeys(got), want)
	}
	integrationID, integration := s.one(t, "AWS::ApiGatewayV2::Integration", nil)
	for key, r := range got {
		if r["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("%s: authorization %v, want AWS_IAM", key, r["AuthorizationType"])
		}
		target, _ := json.Marshal(r["Target"])
		if want, _ := json.Marshal(map[string]any{"Fn::Join": []any{"", []any{"integrations/", map[string]any{"Ref": integrationID}}}}); string(target) != string(want) {
			t.Errorf("%s: target %s, want the API function's integration", key, target)
		}
	}
	apiFn, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-api"))
	if integration["IntegrationType"] != "AWS_PROXY" || integration["PayloadFormatVersion"] != "2.0" || ref(integration["IntegrationUri"]) != apiFn {
		t.Errorf("integration %v, want a 2.0 proxy to %s", integration, apiFn)
	}
	if n := len(s.resources("AWS::ApiGatewayV2::Authorizer")); n != 0 {
		t.Errorf("%d authorizers in IAM mode", n)
	}
}

func TestHTTPAPIStage(t *testing.T) {
	s := defaults(t)
	_, stage := s.one(t, "AWS::ApiGatewayV2::Stage", nil)
	if stage["StageName"] != "$default" || stage["AutoDeploy"] != true {
		t.Errorf("stage %v", stage)
	}
	routeSettings := stage["DefaultRouteSettings"].(map[string]any)
	if routeSettings["ThrottlingRateLimit"] != 50.0 || routeSettings["ThrottlingBurstLimit"] != 100.0 {
		t.Errorf("throttling %v, want 50/100", routeSettings)
	}
	access := stage["AccessLogSettings"].(map[string]any)
	group := ref(access["DestinationArn"])
	if lg := s.resources("AWS::Logs::LogGroup")[group]; lg == nil {
		t.Errorf("access logs go to %v, not a log group of the stack", access["DestinationArn"])
	}
	var format map[string]string
	if err := json.Unmarshal([]byte(access["Format"].(string)), &format); err != nil || format["requestId"] != "$context.requestId" {
		t.Errorf("access log format %v is not JSON with the request id (%v)", access["Format"], err)
	}

	tuned := build(t, map[string]any{"apiThrottleRate": "7", "apiThrottleBurst": 9.0}, false)
	_, stage = tuned.one(t, "AWS::ApiGatewayV2::Stage", nil)
	routeSettings = stage["DefaultRouteSettings"].(map[string]any)
	if routeSettings["ThrottlingRateLimit"] != 7.0 || routeSettings["ThrottlingBurstLimit"] != 9.0 {
		t.Errorf("throttling %v, want 7/9 from the context", routeSettings)
	}
}

func TestJWTMode(t *testing.T) {
	s := build(t, map[string]any{"jwtIssuer": "https://issuer.example.com/", "jwtAudience": "aijobs, aijobs-cli"}, false)
	authID, auth := s.one(t, "AWS::ApiGatewayV2::Authorizer", nil)
	cfg := auth["JwtConfiguration"].(map[string]any)
	if auth["AuthorizerType"] != "JWT" || cfg["Issuer"] != "https://issuer.example.com/" ||
		!equalSets(strs(cfg["Audience"]), []string{"aijobs", "aijobs-cli"}) {
		t.Errorf("authorizer %v", auth)
	}
	for key, r := range routes(t, s) {
		if r["AuthorizationType"] != "JWT" || ref(r["AuthorizerId"]) != authID {
			t.Errorf("%s: %v %v, want the JWT authorizer", key, r["AuthorizationType"], r["AuthorizerId"])
		}
	}
}

func TestOutputs(t *testing.T) {
	s := defaults(t)
	for _, o := range []string{"ApiUrl", "TableName", "TenantsTableName", "QueueUrl", "DlqUrl", "AlarmTopicArn", "ReconcilerFunctionName", "OperatorPolicyArn"} {
		must(t, "output "+o, func() { s.tmpl.HasOutput(jsii.String(o), map[string]any{}) })
	}
	reconciler, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-reconciler"))
	if v := s.json["Outputs"].(map[string]any)["ReconcilerFunctionName"].(map[string]any)["Value"]; ref(v) != reconciler {
		t.Errorf("ReconcilerFunctionName = %v, want a reference to %s", v, reconciler)
	}
}

// functionPolicy is a function's resource policy as Lambda builds it from
// the template's AWS::Lambda::Permission resources: one Allow statement
// each, with the SourceArn as an ArnLike condition and the SourceAccount
// as a StringEquals one (Lambda developer guide, access-control-resource-
// based.html and the AddPermission API).
func functionPolicy(t *testing.T, s *synthesized, functionID string) map[string]any {
	t.Helper()
	var statements []any
	for id, r := range s.resources("AWS::Lambda::Permission") {
		p := r["Properties"].(map[string]any)
		if ref(p["FunctionName"]) != functionID {
			continue
		}
		cond := map[string]any{}
		if arn, ok := p["SourceArn"]; ok {
			cond["ArnLike"] = map[string]any{"AWS:SourceArn": arn}
		}
		if acct, ok := p["SourceAccount"]; ok {
			cond["StringEquals"] = map[string]any{"AWS:SourceAccount": acct}
		}
		statements = append(statements, map[string]any{"Sid": id, "Effect": "Allow", "Principal": map[string]any{"Service": p["Principal"]},
			"Action": p["Action"], "Resource": map[string]any{"Fn::GetAtt": []any{functionID, "Arn"}}, "Condition": cond})
	}
	return map[string]any{"Statement": statements}
}

// Every route of the HTTP API may invoke the API function. API Gateway
// invokes a Lambda integration with aws:SourceArn set to the route's
// execute-api ARN, <api id>/<stage>/<method>/<path> for a route with a
// method and <api id>/<stage>/$default for the $default route (two
// segments: aws/serverless-application-model#1860, where "*/*/*" did not
// match and the fix is "*/$default"); Lambda matches it against each
// permission's SourceArn with ArnLike. A route nobody may invoke answers
// API Gateway's own 500 "Internal Server Error" instead of the function's
// problem+json, and counts towards Api5xx.
func TestEveryRouteCanInvokeTheAPIFunction(t *testing.T) {
	s := defaults(t)
	env := stackEnv(s)
	apiID, _ := s.one(t, "AWS::ApiGatewayV2::Api", nil)
	fnID, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-api"))
	_, stage := s.one(t, "AWS::ApiGatewayV2::Stage", nil)
	policy := functionPolicy(t, s, fnID)
	invoke := func(api, account, route string) request {
		arn := fmt.Sprintf("arn:aws:execute-api:us-east-1:%s:%s/%s/%s", account, api, stage["StageName"], route)
		return request{service: "apigateway.amazonaws.com", action: "lambda:InvokeFunction", resource: env[fnID+".Arn"],
			context: map[string]string{"aws:SourceArn": arn, "aws:SourceAccount": account}}
	}
	for key := range routes(t, s) {
		// the route's ARN part, and (for a path with parameters) the same
		// with a concrete value, in case API Gateway sends the request's path
		parts := []string{"$default"}
		if key != "$default" {
			method, path, _ := strings.Cut(key, " ")
			parts = []string{method + path, method + regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "j_0123")}
		}
		for _, part := range parts {
			if ok, why := allows(t, policy, invoke(env[apiID], "111122223333", part), env); !ok {
				t.Errorf("route %q (%s): API Gateway may not invoke the function: %s", key, part, why)
			}
		}
	}
	for what, r := range map[string]request{
		"another API":     invoke("zzzzzzzzzz", "111122223333", "GET/jobs"),
		"another account": invoke(env[apiID], "444455556666", "GET/jobs"),
	} {
		if ok, why := allows(t, policy, r, env); ok {
			t.Errorf("%s may invoke the API function: %s", what, why)
		}
	}
}
