package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A small IAM policy evaluator for resource policies in the template (the
// alarm topic's, the alarm key's, the API function's invoke permissions)
// and for a function role's own policy, so a test can ask "may this
// caller do this" the way AWS decides it, and not only what the JSON
// looks like. It implements what these policies use, as the IAM User
// Guide documents it:
//
//   - evaluation logic (reference_policies_evaluation-logic.html): an
//     explicit Deny in any matching statement wins, otherwise a matching
//     Allow allows, otherwise the request is implicitly denied;
//   - Action and Resource: case-insensitive actions, "*" and "?" wildcards
//     (reference_policies_elements_action.html, _resource.html);
//   - a statement with no Resource is a role's trust policy's (which
//     cannot name one, reference_policies_elements_resource.html): it
//     applies to the role it belongs to, whatever the request names;
//   - Principal "*", {"AWS": ...} and {"Service": ...}; a statement with
//     no Principal is an identity-based policy's (which cannot name one,
//     reference_policies_elements_principal.html) and applies to the
//     identity it is attached to: here, a request marked identity;
//   - Condition (reference_policies_elements_condition_operators.html):
//     every operator of a statement must match and, within one, every key;
//     a key with several values matches if any does; a key absent from the
//     request makes its condition false (no ...IfExists here), except
//     under ForAllValues, which is true of an absent key, and otherwise
//     holds when each of the request's values matches one of the
//     condition's (reference_policies_condition-single-vs-multi-valued-context-keys.html;
//     a request here carries one value a key, as a DynamoDB item call's
//     dynamodb:LeadingKeys does). Condition
//     key names are case-insensitive. Bool and StringEquals compare
//     strings, StringLike with wildcards, ArnEquals/ArnLike compare "each
//     of the six colon-delimited components of the ARN separately", each
//     with "*" and "?" wildcards (so "*" never crosses a ":" but does
//     cross a "/").

// request is one call as IAM sees it.
type request struct {
	service string // the calling service principal, e.g. cloudwatch.amazonaws.com
	// identity marks a call by the identity whose own policy is evaluated
	// (a function's role), not by a principal a resource policy names.
	identity bool
	action   string
	// resource is the ARN acted on ("*" in a key policy means the key).
	resource string
	context  map[string]string // condition keys, e.g. aws:SourceArn
}

// pseudo is how the tests resolve the template's pseudo parameters.
var pseudo = map[string]string{
	"AWS::Partition": "aws",
	"AWS::Region":    "us-east-1",
	"AWS::AccountId": "111122223333",
	"AWS::URLSuffix": "amazonaws.com",
}

// resolve turns a template value into the string CloudFormation would
// deploy, with refs looked up in env (logical ids, "Id.Attr" for GetAtt,
// or a pseudo parameter to override) and else the pseudo parameters above. An unresolvable token fails the test.
func resolve(t *testing.T, v any, env map[string]string) string {
	t.Helper()
	lookup := func(name string) string {
		if s, ok := env[name]; ok {
			return s
		}
		if s, ok := pseudo[name]; ok {
			return s
		}
		t.Fatalf("resolve: no value for %q", name)
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if r, ok := x["Ref"].(string); ok {
			return lookup(r)
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return lookup(fmt.Sprintf("%v.%v", g[0], g[1]))
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			parts, _ := j[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				out[i] = resolve(t, p, env)
			}
			return strings.Join(out, fmt.Sprint(j[0]))
		}
		if sub, ok := x["Fn::Sub"].(string); ok {
			return regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(sub, func(m string) string {
				return lookup(strings.TrimSuffix(strings.TrimPrefix(m, "${"), "}"))
			})
		}
	}
	t.Fatalf("resolve: cannot resolve %#v", v)
	return ""
}

// allows evaluates one policy document for req: true only if a statement
// allows it and none denies it. why names the deciding statement.
func allows(t *testing.T, doc any, req request, env map[string]string) (ok bool, why string) {
	t.Helper()
	statements, _ := doc.(map[string]any)["Statement"].([]any)
	allowed := ""
	for i, st := range statements {
		s := st.(map[string]any)
		if !principalMatches(s["Principal"], req) || !listMatches(t, s["Action"], req.action, env, true) ||
			s["Resource"] != nil && !listMatches(t, s["Resource"], req.resource, env, false) || !conditionsMatch(t, s["Condition"], req.context, env) {
			continue
		}
		name := fmt.Sprintf("statement %d %v", i, s["Sid"])
		if s["Effect"] == "Deny" {
			return false, "denied by " + name
		}
		allowed = name
	}
	if allowed == "" {
		return false, "no statement allows it (implicit deny)"
	}
	return true, "allowed by " + allowed
}

func principalMatches(p any, req request) bool {
	switch x := p.(type) {
	case nil:
		return req.identity
	case string:
		return x == "*"
	case map[string]any:
		if x["AWS"] == "*" {
			return true
		}
		for _, s := range strs(x["Service"]) {
			if s == req.service {
				return true
			}
		}
	}
	return false
}

func listMatches(t *testing.T, patterns any, value string, env map[string]string, fold bool) bool {
	t.Helper()
	list, ok := patterns.([]any)
	if !ok {
		list = []any{patterns}
	}
	for _, p := range list {
		pattern := resolve(t, p, env)
		if fold {
			pattern, value = strings.ToLower(pattern), strings.ToLower(value)
		}
		if wildcard(pattern, value) {
			return true
		}
	}
	return false
}

func conditionsMatch(t *testing.T, c any, ctx map[string]string, env map[string]string) bool {
	t.Helper()
	ops, _ := c.(map[string]any)
	for op, keys := range ops {
		for key, want := range keys.(map[string]any) {
			got, present := "", false
			for k, v := range ctx {
				if strings.EqualFold(k, key) {
					got, present = v, true
				}
			}
			op, set := strings.CutPrefix(op, "ForAllValues:")
			if !present {
				if set {
					continue
				}
				return false
			}
			values, ok := want.([]any)
			if !ok {
				values = []any{want}
			}
			matched := false
			for _, w := range values {
				pattern := resolve(t, w, env)
				switch op {
				case "Bool", "StringEquals", "ArnEquals":
					matched = matched || (op == "ArnEquals" && arnLike(pattern, got, false)) || (op != "ArnEquals" && pattern == got)
				case "StringLike":
					matched = matched || wildcard(pattern, got)
				case "ArnLike":
					matched = matched || arnLike(pattern, got, true)
				default:
					t.Fatalf("condition operator %s is not modelled", op)
				}
			}
			if !matched {
				return false
			}
		}
	}
	return true
}

// arnLike compares the six colon-delimited components of two ARNs one by
// one (the sixth keeps any further colons), with wildcards if like.
func arnLike(pattern, arn string, like bool) bool {
	p, a := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(p) != 6 || len(a) != 6 {
		return false
	}
	for i := range p {
		if like && !wildcard(p[i], a[i]) || !like && p[i] != a[i] {
			return false
		}
	}
	return true
}

// wildcard matches "*" (any run of characters, "/" included) and "?" (one
// character); everything else literally.
func wildcard(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(s)
}

// The evaluator itself, on the documented examples it relies on.
func TestPolicyEvaluator(t *testing.T) {
	env := map[string]string{"Topic": "arn:aws:sns:us-east-1:111122223333:alarms"}
	doc := map[string]any{"Statement": []any{
		map[string]any{"Effect": "Allow", "Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"}, "Action": "sns:Publish",
			"Resource": map[string]any{"Ref": "Topic"}, "Condition": map[string]any{
				"ArnLike":      map[string]any{"aws:SourceArn": "arn:aws:cloudwatch:us-east-1:111122223333:alarm:app-*"},
				"StringEquals": map[string]any{"aws:SourceAccount": map[string]any{"Ref": "AWS::AccountId"}}}},
		map[string]any{"Effect": "Deny", "Principal": "*", "Action": "sns:*", "Resource": "*",
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}},
	}}
	publish := func(arn, account, tls string) request {
		return request{service: "cloudwatch.amazonaws.com", action: "SNS:Publish", resource: env["Topic"],
			context: map[string]string{"aws:SourceArn": arn, "aws:SourceAccount": account, "aws:SecureTransport": tls}}
	}
	for _, tc := range []struct {
		req  request
		want bool
	}{
		{publish("arn:aws:cloudwatch:us-east-1:111122223333:alarm:app-Dlq", "111122223333", "true"), true},
		{publish("arn:aws:cloudwatch:us-east-1:111122223333:alarm:app-Dlq", "111122223333", "false"), false}, // explicit deny wins
		{publish("arn:aws:cloudwatch:us-east-1:111122223333:alarm:other", "111122223333", "true"), false},
		{publish("arn:aws:cloudwatch:us-east-1:444455556666:alarm:app-Dlq", "444455556666", "true"), false},
		{request{service: "cloudwatch.amazonaws.com", action: "sns:Publish", resource: env["Topic"]}, false}, // no context keys
		{request{service: "events.amazonaws.com", action: "sns:Publish", resource: env["Topic"],
			context: publish("arn:aws:cloudwatch:us-east-1:111122223333:alarm:app-Dlq", "111122223333", "true").context}, false},
	} {
		if got, why := allows(t, doc, tc.req, env); got != tc.want {
			t.Errorf("%+v: %v (%s), want %v", tc.req, got, why, tc.want)
		}
	}
	// An identity-based statement (no Principal) is the identity's own:
	// it allows that identity's calls and no service's; "?" is one
	// character, so a secret's "-??????" matches its six-character suffix
	// and not a longer name.
	role := map[string]any{"Statement": []any{map[string]any{"Effect": "Allow", "Action": []any{"secretsmanager:GetSecretValue"},
		"Resource": "arn:aws:secretsmanager:us-east-1:111122223333:secret:app/key-??????"}}}
	for _, tc := range []struct {
		req  request
		want bool
	}{
		{request{identity: true, action: "secretsmanager:GetSecretValue", resource: "arn:aws:secretsmanager:us-east-1:111122223333:secret:app/key-AbCdEf"}, true},
		{request{identity: true, action: "secretsmanager:GetSecretValue", resource: "arn:aws:secretsmanager:us-east-1:111122223333:secret:app/key-admin-AbCdEf"}, false},
		{request{identity: true, action: "secretsmanager:PutSecretValue", resource: "arn:aws:secretsmanager:us-east-1:111122223333:secret:app/key-AbCdEf"}, false},
		{request{service: "lambda.amazonaws.com", action: "secretsmanager:GetSecretValue",
			resource: "arn:aws:secretsmanager:us-east-1:111122223333:secret:app/key-AbCdEf"}, false},
	} {
		if got, why := allows(t, role, tc.req, nil); got != tc.want {
			t.Errorf("%+v: %v (%s), want %v", tc.req, got, why, tc.want)
		}
	}
	// ForAllValues:StringLike: a request's key must match a pattern; a
	// request without the key is allowed (a set of no values).
	items := map[string]any{"Statement": []any{map[string]any{"Effect": "Allow", "Action": "dynamodb:UpdateItem", "Resource": "arn:t",
		"Condition": map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"tenant#*", "open"}}}}}}
	for key, want := range map[string]bool{"tenant#a": true, "open": true, "opened": false, "model#tenant#a": false, "": true} {
		req := request{identity: true, action: "dynamodb:UpdateItem", resource: "arn:t"}
		if key != "" {
			req.context = map[string]string{"dynamodb:LeadingKeys": key}
		}
		if got, why := allows(t, items, req, nil); got != want {
			t.Errorf("leading key %q: %v (%s), want %v", key, got, why, want)
		}
	}
	// ArnLike: "*" stays inside its component but crosses "/".
	for _, tc := range []struct {
		pattern, arn string
		want         bool
	}{
		{"arn:aws:execute-api:us-east-1:1:api/*/*/*", "arn:aws:execute-api:us-east-1:1:api/$default/GET/jobs/{id}", true},
		{"arn:aws:execute-api:us-east-1:1:api/*/*/*", "arn:aws:execute-api:us-east-1:1:api/$default/$default", false},
		{"arn:aws:execute-api:us-east-1:1:api/*/$default", "arn:aws:execute-api:us-east-1:1:api/$default/$default", true},
		{"arn:aws:execute-api:*:1:api/*", "arn:aws:execute-api:us-east-1:1:api/x", true},
		{"arn:aws:execute-api:*:1:api/*", "arn:aws:execute-api:us-east-1:2:api/x", false},
		{"arn:aws:cloudwatch:us-east-1:1:alarm:a-?", "arn:aws:cloudwatch:us-east-1:1:alarm:a-b", true},
	} {
		if got := arnLike(tc.pattern, tc.arn, true); got != tc.want {
			t.Errorf("ArnLike(%q, %q) = %v, want %v", tc.pattern, tc.arn, got, tc.want)
		}
	}
}
