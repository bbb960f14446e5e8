package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// grants lists a role's permissions as "action on resource", from its
// inline policies and any AWS::IAM::Policy attached to it. A resource of
// the stack is its logical id; any other ARN is rendered (render), and a
// statement's condition is appended as " if <condition>".
func grants(t *testing.T, s *synthesized, roleID string) []string {
	t.Helper()
	var docs []any
	role := s.resources("AWS::IAM::Role")[roleID]
	if role == nil {
		t.Fatalf("no role %s", roleID)
	}
	props := role["Properties"].(map[string]any)
	if m := props["ManagedPolicyArns"]; m != nil {
		t.Errorf("role %s has managed policies %v: only its own statements are allowed", roleID, m)
	}
	if p, ok := props["Policies"].([]any); ok {
		for _, pol := range p {
			docs = append(docs, pol.(map[string]any)["PolicyDocument"])
		}
	}
	for _, pol := range s.resources("AWS::IAM::Policy") {
		pp := pol["Properties"].(map[string]any)
		for _, r := range pp["Roles"].([]any) {
			if ref(r) == roleID {
				docs = append(docs, pp["PolicyDocument"])
			}
		}
	}
	return allowed(docs...)
}

// allowed flattens policy documents into "action on resource[ if condition]".
func allowed(docs ...any) []string {
	var out []string
	for _, d := range docs {
		for _, st := range d.(map[string]any)["Statement"].([]any) {
			stmt := st.(map[string]any)
			if stmt["Effect"] != "Allow" {
				continue
			}
			var resources []any
			switch r := stmt["Resource"].(type) {
			case []any:
				resources = r
			default:
				resources = []any{r}
			}
			cond := ""
			if c, ok := stmt["Condition"].(map[string]any); ok {
				cond = " if " + renderCondition(c)
			}
			for _, a := range strs(stmt["Action"]) {
				for _, r := range resources {
					name := ref(r)
					if name == "" {
						name = render(r) // a literal: "*" would show up here
					}
					out = append(out, a+" on "+name+cond)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// renderCondition writes {"ArnLike": {"k": v}} as "ArnLike k=v".
func renderCondition(c map[string]any) string {
	var parts []string
	for op, kv := range c {
		for k, v := range kv.(map[string]any) {
			parts = append(parts, fmt.Sprintf("%s %s=%s", op, k, render(v)))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " and ")
}

// roleOf is the logical id of a function's role and its log group.
func roleOf(t *testing.T, s *synthesized, fn string) (role, logs string) {
	t.Helper()
	_, props := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-"+fn))
	return ref(props["Role"]), ref(props["LoggingConfig"].(map[string]any)["LogGroup"])
}

// basePermissions is what each function may call with no model routes.
func basePermissions(t *testing.T, s *synthesized) map[string][]string {
	t.Helper()
	st := s.cfg.Settings
	table, _ := s.one(t, "AWS::DynamoDB::Table", nil)
	queue, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	dlq, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
	index := func(name string) string { return "${" + table + ".Arn}/index/" + name }
	return map[string][]string{
		"api": {
			"dynamodb:GetItem on " + table, "dynamodb:PutItem on " + table, "dynamodb:UpdateItem on " + table,
			"dynamodb:Query on " + index(st.TenantIndex),
			"sqs:SendMessage on " + queue,
		},
		"worker": {
			"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table,
			"sqs:ChangeMessageVisibility on " + queue, "sqs:DeleteMessage on " + queue,
			"sqs:GetQueueAttributes on " + queue, "sqs:ReceiveMessage on " + queue,
			"sqs:SendMessage on " + dlq,
		},
		"reconciler": {
			"dynamodb:Query on " + index(st.ActiveIndex),
			"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table,
			"sqs:SendMessage on " + queue,
		},
	}
}

// Each function may call exactly what DESIGN 4 says it calls, on exactly
// its resources: the API creates, reads, lists (the tenant index only)
// and cancels (no DeleteItem, no Scan, no receiving); the worker claims
// and records (no PutItem) and sends to the DLQ only; the reconciler reads
// the active index (no other index, no Scan), moves stuck jobs and sends
// them to the job queue; each writes only to its own log group.
func TestFunctionPermissionsAreExact(t *testing.T) {
	s := defaults(t)
	for fn, w := range basePermissions(t, s) {
		role, group := roleOf(t, s, fn)
		w = append(w, "logs:CreateLogStream on "+group, "logs:PutLogEvents on "+group)
		if got := grants(t, s, role); !equalSets(got, w) {
			t.Errorf("%s may\n  %v\nwant exactly\n  %v", fn, got, w)
		}
	}
	if n := len(s.resources("AWS::IAM::Role")); n != 3 {
		t.Errorf("%d roles, want the three function roles only", n)
	}
	if p := s.resources("AWS::IAM::Policy"); len(p) != 0 {
		t.Errorf("unexpected IAM policies %v: every statement belongs in a function role", sortedKeys(p))
	}
}

// The operators' policy allows exactly what `failures` and `replay` call,
// on exactly their resources, and is attached to nothing.
func TestOperatorPolicy(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	table, _ := s.one(t, "AWS::DynamoDB::Table", nil)
	queue, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	dlq, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
	policyID, p := s.one(t, "AWS::IAM::ManagedPolicy", nil)
	if p["ManagedPolicyName"] != st.Prefix+"-operator" {
		t.Errorf("policy name %v", p["ManagedPolicyName"])
	}
	for _, k := range []string{"Roles", "Users", "Groups"} {
		if p[k] != nil {
			t.Errorf("the operator policy is attached (%s %v): the stack attaches it to nobody", k, p[k])
		}
	}
	want := []string{
		"dynamodb:Query on ${" + table + ".Arn}/index/" + st.FailureIndex,
		"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table,
		"sqs:ReceiveMessage on " + dlq, "sqs:DeleteMessage on " + dlq, "sqs:ChangeMessageVisibility on " + dlq, "sqs:GetQueueAttributes on " + dlq,
		"sqs:SendMessage on " + queue,
	}
	if got := allowed(p["PolicyDocument"]); !equalSets(got, want) {
		t.Errorf("operators may\n  %v\nwant exactly\n  %v", got, want)
	}
	out := s.json["Outputs"].(map[string]any)["OperatorPolicyArn"].(map[string]any)
	if b, _ := json.Marshal(out["Value"]); ref(out["Value"]) != policyID {
		t.Errorf("OperatorPolicyArn = %s, want the ARN of %s", b, policyID)
	}
}
