package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// grants lists a role's permissions as "action on resource", from its
// inline policies and any AWS::IAM::Policy attached to it. A resource of
// the stack is its logical id (its Ref or its Arn); any other ARN, another
// attribute of a resource (${Jobs.StreamArn}) included, is rendered
// (render), and a statement's condition is appended as " if <condition>".
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
					m, _ := r.(map[string]any)
					if g, ok := m["Fn::GetAtt"].([]any); name == "" || ok && len(g) == 2 && g[1] != "Arn" {
						name = render(r) // a literal ("*" would show up here), or not the resource's own ARN
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
	table := jobsTable(t, s)
	queue, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	dlq, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
	callbacks, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackQueueName()))
	callbackDLQ, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackDLQName()))
	secret, _ := s.one(t, "AWS::SecretsManager::Secret", named("Name", st.WebhookSecretName()))
	tenants, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.TenantsTableName()))
	quarantine, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.QuarantineTableName()))
	buckets, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.BucketsTableName()))
	bucket, _ := parkBucket(t, s)
	index := func(name string) string { return "${" + table + ".Arn}/index/" + name }
	stream := "${" + table + ".StreamArn}"
	parked := "${" + bucket + ".Arn}/parked/*"
	payloads := payloadGrants(t, s)
	base := map[string][]string{
		"api": {
			"dynamodb:GetItem on " + table, "dynamodb:PutItem on " + table, "dynamodb:UpdateItem on " + table,
			"dynamodb:Query on " + index(st.TenantIndex),
			"sqs:SendMessage on " + queue,
			// the webhook key routes: a tenant's key versions, read and
			// rotated, its key derived from the signing secret (not the seed)
			"dynamodb:GetItem on " + tenants, "dynamodb:UpdateItem on " + tenants,
			"secretsmanager:GetSecretValue on " + secret,
			"dynamodb:GetItem on " + quarantine, // is this input quarantined?
			// a tenant's queued set: add, clear, remove; its tenant's item
			// only; and its spend balance's parts, read by a create and GET /spend
			"dynamodb:GetItem on " + buckets + ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#*"]`,
			"dynamodb:UpdateItem on " + buckets + ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#*"]`,
		},
		"worker": {
			"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table,
			"sqs:ChangeMessageVisibility on " + queue, "sqs:DeleteMessage on " + queue,
			"sqs:GetQueueAttributes on " + queue, "sqs:ReceiveMessage on " + queue,
			"sqs:SendMessage on " + queue, // a fresh message for a live job at its receive limit
			"sqs:SendMessage on " + dlq,
			// parks an outcome, deletes it once recorded, settles another's
			"s3:PutObject on " + parked, "s3:GetObject on " + parked, "s3:DeleteObject on " + parked,
			"s3:ListBucket on " + bucket,        // a missing key is 404, not 403
			"dynamodb:PutItem on " + quarantine, // a deterministic failure's input
			// a provider key's rate-limit bucket: taken from, given back
			// to and paused (UpdateItem), read (GetItem); nothing else
			"dynamodb:GetItem on " + buckets, "dynamodb:UpdateItem on " + buckets,
		},
		"reconciler": {
			"dynamodb:Query on " + index(st.ActiveIndex),
			"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table,
			"sqs:SendMessage on " + queue, "sqs:GetQueueAttributes on " + queue,
			"sqs:ReceiveMessage on " + dlq, // the DLQ sweep: it receives, never deletes
			// the DLQ sweep settles a dead attempt's parked outcome; it never parks
			"s3:GetObject on " + parked, "s3:DeleteObject on " + parked,
			"s3:ListBucket on " + bucket,
			// a dead attempt's spend holds: looked for and settled, nothing else of the table
			"dynamodb:GetItem on " + buckets + spendKeys, "dynamodb:UpdateItem on " + buckets + spendKeys,
		},
		"notifier": {
			"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table, // reads a job, records a delivery
			// its stream mapping, on the stream only
			"dynamodb:DescribeStream on " + stream, "dynamodb:GetRecords on " + stream,
			"dynamodb:GetShardIterator on " + stream, "dynamodb:ListStreams on " + stream,
			"sqs:SendMessage on " + callbacks, // notices from the stream
			"sqs:ReceiveMessage on " + callbacks, "sqs:DeleteMessage on " + callbacks, "sqs:GetQueueAttributes on " + callbacks,
			"sqs:ChangeMessageVisibility on " + callbacks, // a failed delivery's backoff
			"sqs:SendMessage on " + callbackDLQ,           // gives a notice up; the stream mapping's on-failure destination
			// its sweep: a redriven notice is replaced by a marked copy
			"sqs:ReceiveMessage on " + callbackDLQ, "sqs:DeleteMessage on " + callbackDLQ,
			"secretsmanager:GetSecretValue on " + secret, // its signing secret, not the seed
			"dynamodb:GetItem on " + tenants,             // a tenant's key versions, never written
		},
	}
	for fn, g := range payloads {
		if fn != "collector" { // collectorGrants has its own
			base[fn] = append(base[fn], g...)
		}
	}
	return base
}

// Each function may call exactly what docs/architecture.md ("What each
// function may call") says it calls, on exactly its resources: the API
// creates, reads, lists (the tenant index only) and cancels (no
// DeleteItem, no Scan, no receiving); the worker claims and records (no
// PutItem), renews a live job's message at its receive limit and sends to
// the DLQ; the reconciler reads the active index (no other index, no
// Scan), moves stuck jobs and sends them to the job queue; the worker
// parks, reads and deletes parked outcomes and the reconciler reads and
// deletes them, on parked/* only, both with ListBucket on the bucket (so
// a missing key is a 404, not a 403), and the API and the notifier have
// nothing on the bucket; the notifier reads and records jobs (no PutItem,
// no Query), reads the stream, works its own queue and DLQ (never the job
// queue) and reads its signing secret (never the seed); each writes only
// to its own log group.
// spendKeys is the condition on a grant of the spend balances alone.
const spendKeys = ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#spend#*"]`

func TestFunctionPermissionsAreExact(t *testing.T) {
	s := defaults(t)
	for fn, w := range basePermissions(t, s) {
		role, group := roleOf(t, s, fn)
		w = append(w, "logs:CreateLogStream on "+group, "logs:PutLogEvents on "+group)
		if got := grants(t, s, role); !equalSets(got, w) {
			t.Errorf("%s may\n  %v\nwant exactly\n  %v", fn, got, w)
		}
	}
	if n := len(s.resources("AWS::IAM::Role")); n != len(functionNames) {
		t.Errorf("%d roles, want the %d function roles only", n, len(functionNames))
	}
	if p := s.resources("AWS::IAM::Policy"); len(p) != 0 {
		t.Errorf("unexpected IAM policies %v: every statement belongs in a function role", sortedKeys(p))
	}
}

// Only the worker, the API and the collector have anything on the side
// table (the buckets table): the worker exactly GetItem and UpdateItem on
// the table itself (no PutItem, no Query or Scan, no index), the API
// UpdateItem alone on tenants' items (a tenant's queued set), the
// collector, deployed with a batch lane, GetItem, PutItem and UpdateItem
// on its batch records and their list; no other
// function's role, and not the operators' policy, has any statement on
// it, with or without routes.
func TestBucketsTableGrants(t *testing.T) {
	for name, s := range map[string]*synthesized{"defaults": defaults(t), "routed": routed(t), "batch lanes": batched(t)} {
		id, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", s.cfg.Settings.BucketsTableName()))
		on := func(gs []string) []string {
			var out []string
			for _, g := range gs {
				if strings.Contains(g, " on "+id) || strings.Contains(g, "${"+id+".") {
					out = append(out, g)
				}
			}
			return out
		}
		fns := functionNames
		if name == "batch lanes" {
			fns = append(slices.Clone(fns), collectorName)
		}
		for _, fn := range fns {
			role, _ := roleOf(t, s, fn)
			var want []string
			switch fn {
			case "worker":
				want = []string{"dynamodb:GetItem on " + id, "dynamodb:UpdateItem on " + id}
			case "api":
				want = []string{"dynamodb:GetItem on " + id + ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#*"]`,
					"dynamodb:UpdateItem on " + id + ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#*"]`}
			case "reconciler":
				want = []string{"dynamodb:GetItem on " + id + spendKeys, "dynamodb:UpdateItem on " + id + spendKeys}
			case collectorName:
				const batches = ` if ForAllValues:StringLike dynamodb:LeadingKeys=["batch#*","batches#open"]`
				want = []string{"dynamodb:GetItem on " + id + batches, "dynamodb:PutItem on " + id + batches, "dynamodb:UpdateItem on " + id + batches}
			}
			if got := on(grants(t, s, role)); !equalSets(got, want) {
				t.Errorf("%s: %s may %v on the buckets table, want exactly %v", name, fn, got, want)
			}
		}
		_, p := s.one(t, "AWS::IAM::ManagedPolicy", nil)
		spend := []string{"dynamodb:GetItem on " + id + ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#spend#*"]`}
		if got := on(allowed(p["PolicyDocument"])); !equalSets(got, spend) {
			t.Errorf("%s: operators may %v on the buckets table, want only the spend balances' reads %v", name, got, spend)
		}
	}
}

// testRoutes has one provider of each kind a deployed stack can grant:
// Anthropic with a complete and a partial secret ARN, OpenAI with a secret
// by name, Bedrock in the stack's Region (a foundation model and a US
// inference profile) and in another (a global profile).
const testRoutes = `{
  "providers": {
    "anthropic":  {"kind": "anthropic", "api_key_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic-AbCdEf"},
    "anthropic2": {"kind": "anthropic", "api_key_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic2"},
    "openai":     {"kind": "openai", "base_url": "https://api.openai.com/v1", "api_key_secret": "aijobs/openai"},
    "bedrock":    {"kind": "bedrock"},
    "bedrock-west": {"kind": "bedrock", "region": "us-west-2"}
  },
  "routes": {
    "default": {
      "rungs": [
        {"provider": "anthropic", "model": "claude-sonnet-4-5", "price": {"input": "300", "output": "1500"}, "timeout": "40s"},
        {"provider": "bedrock", "model": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "price": {"input": "300", "output": "1500"}, "timeout": "40s"},
        {"provider": "openai", "model": "gpt-4o", "price": {"input": "250", "output": "1000"}, "timeout": "40s"}
      ],
      "fallback_on": ["rate_limited", "overloaded", "provider_error", "timeout", "network"]
    },
    "cheap":  {"rungs": [{"provider": "bedrock", "model": "amazon.nova-lite-v1:0", "price": {"input": "6", "output": "24"}}]},
    "global": {"rungs": [{"provider": "bedrock-west", "model": "global.anthropic.claude-haiku-4-5-20251001-v1:0", "price": {"input": "100", "output": "500"}}]},
    "backup": {"rungs": [{"provider": "anthropic2", "model": "claude-haiku-4-5", "price": {"input": "100", "output": "500"}}]}
  }
}`

// The inference profiles of testRoutes, their ARNs and their models.
const (
	usProfile     = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	globalProfile = "arn:${AWS::Partition}:bedrock:us-west-2:${AWS::AccountId}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0"
	usModels      = "arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"
	globalModels  = "arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"
	globalNoRegio = "arn:${AWS::Partition}:bedrock:::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"
)

// routed is the stack with testRoutes (from a routes file), synthesized
// once.
func routed(t *testing.T) *synthesized {
	t.Helper()
	return routedStack.get(t, "routed", func(dir string) map[string]any {
		routes := filepath.Join(dir, "routes.json")
		if err := os.WriteFile(routes, []byte(testRoutes), 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"routesFile": routes}
	})
}

var routedStack sharedStack

// The worker gets exactly what the routes call, and the API and the
// reconciler (which never call a model) get nothing more than without
// routes.
func TestModelGrantsAreExact(t *testing.T) {
	s := routed(t)
	base := basePermissions(t, s)
	var model []string
	for _, a := range bedrockActions {
		for _, r := range []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/amazon.nova-lite-v1:0",
			usProfile, globalProfile,
		} {
			model = append(model, a+" on "+r)
		}
		model = append(model,
			a+" on "+usModels+" if ArnLike bedrock:InferenceProfileArn="+usProfile,
			a+" on "+globalModels+" if ArnLike bedrock:InferenceProfileArn="+globalProfile,
			a+" on "+globalNoRegio+" if ArnLike bedrock:InferenceProfileArn="+globalProfile)
	}
	model = append(model,
		"secretsmanager:GetSecretValue on arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic-AbCdEf",
		"secretsmanager:GetSecretValue on arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic2-??????",
		"secretsmanager:GetSecretValue on arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:aijobs/openai-??????")
	base["worker"] = append(base["worker"], model...)
	for fn, w := range base {
		role, group := roleOf(t, s, fn)
		w = append(w, "logs:CreateLogStream on "+group, "logs:PutLogEvents on "+group)
		if got := grants(t, s, role); !equalSets(got, w) {
			t.Errorf("%s may\n  %s\nwant exactly\n  %s", fn, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
		}
	}
}

func TestBedrockResources(t *testing.T) {
	for _, tc := range []struct {
		region, model           string
		direct, profile, models string // models joined by " "
		err                     string
	}{
		{"", "amazon.nova-pro-v1:0", "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/amazon.nova-pro-v1:0", "", "", ""},
		{"eu-west-1", "anthropic.claude-3-haiku-20240307-v1:0", "arn:${AWS::Partition}:bedrock:eu-west-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0", "", "", ""},
		{"", "eu.amazon.nova-pro-v1:0", "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/eu.amazon.nova-pro-v1:0",
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/eu.amazon.nova-pro-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/amazon.nova-pro-v1:0", ""},
		{"ap-southeast-2", "apac.amazon.nova-pro-v1:0", "arn:${AWS::Partition}:bedrock:ap-southeast-2:${AWS::AccountId}:inference-profile/apac.amazon.nova-pro-v1:0",
			"arn:${AWS::Partition}:bedrock:ap-southeast-2:${AWS::AccountId}:inference-profile/apac.amazon.nova-pro-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/amazon.nova-pro-v1:0", ""},
		{"", "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0",
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0 arn:${AWS::Partition}:bedrock:::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0", ""},
		{"", "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-text-express-v1", "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-text-express-v1", "", "", ""},
		{"", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-3-70b-instruct-v1:0",
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-3-70b-instruct-v1:0",
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-3-70b-instruct-v1:0",
			"arn:aws:bedrock:*::foundation-model/meta.llama3-3-70b-instruct-v1:0", ""},
		{"", "arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123", "arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123", "", "", ""},
		{"", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", "", "", "", "application inference profile"},
		{"", "arn:aws:s3:::bucket", "", "", "", "not a Bedrock ARN"},
		{"", "${AWS::AccountId}", "", "", "", "not a Bedrock model id"},
	} {
		direct, profile, models, err := bedrockResources(tc.region, tc.model)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.model, err, tc.err)
			}
			continue
		}
		if err != nil || direct != tc.direct || profile != tc.profile || strings.Join(models, " ") != tc.models {
			t.Errorf("%s in %q:\n  %q %q %q %v\nwant\n  %q %q %q", tc.model, tc.region, direct, profile, models, err, tc.direct, tc.profile, tc.models)
		}
	}
}

func TestSecretResource(t *testing.T) {
	for id, want := range map[string]string{
		"aijobs/anthropic": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:aijobs/anthropic-??????",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic-AbCdEf": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic-AbCdEf",
		// partial ARNs: no random suffix
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic":   "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic-??????",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:key-ab12":           "arn:aws:secretsmanager:eu-west-1:123456789012:secret:key-ab12-??????",
		"arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:prod/key_1":     "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:prod/key_1-??????",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod-key-x9Y8z7":    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod-key-x9Y8z7",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/openai-key1": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/openai-key1-??????",
	} {
		if got, err := secretResource(id); err != nil || got != want {
			t.Errorf("secretResource(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for _, id := range []string{"arn:aws:ssm:eu-west-1:123456789012:parameter/key", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:", "a b"} {
		if got, err := secretResource(id); err == nil {
			t.Errorf("secretResource(%q) = %q, want an error", id, got)
		}
	}
}

// The operators' policy allows exactly what `failures` and `replay` call,
// on exactly their resources, and is attached to nothing.
func TestOperatorPolicy(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	table := jobsTable(t, s)
	queue, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	dlq, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
	quarantine, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.QuarantineTableName()))
	buckets, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.BucketsTableName()))
	policyID, p := s.one(t, "AWS::IAM::ManagedPolicy", nil)
	if name := resolve(t, p["ManagedPolicyName"], nil); name != st.Prefix+"-operator-us-east-1" {
		t.Errorf("policy name %v", p["ManagedPolicyName"])
	}
	for _, k := range []string{"Roles", "Users", "Groups"} {
		if p[k] != nil {
			t.Errorf("the operator policy is attached (%s %v): the stack attaches it to nobody", k, p[k])
		}
	}
	want := []string{
		"dynamodb:Query on ${" + table + ".Arn}/index/" + st.FailureIndex,
		"dynamodb:Query on ${" + table + ".Arn}/index/" + st.TenantIndex,
		"dynamodb:Query on ${" + table + ".Arn}/index/" + st.CreatedIndex,
		"dynamodb:Query on ${" + table + ".Arn}/index/" + st.ActiveIndex,
		"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table,
		// aijobs quarantine list (one tenant's, or every tenant's) and lift
		"dynamodb:Query on " + quarantine, "dynamodb:Scan on " + quarantine, "dynamodb:DeleteItem on " + quarantine,
		"sqs:ReceiveMessage on " + dlq, "sqs:DeleteMessage on " + dlq, "sqs:ChangeMessageVisibility on " + dlq, "sqs:GetQueueAttributes on " + dlq,
		"sqs:GetQueueUrl on " + dlq,
		"sqs:SendMessage on " + queue, "sqs:GetQueueAttributes on " + queue, "sqs:GetQueueUrl on " + queue,
		// the console's Spend page: the tenants' balance parts only
		"dynamodb:GetItem on " + buckets + ` if ForAllValues:StringLike dynamodb:LeadingKeys=["tenant#spend#*"]`,
	}
	if got := allowed(p["PolicyDocument"]); !equalSets(got, want) {
		t.Errorf("operators may\n  %v\nwant exactly\n  %v", got, want)
	}
	out := s.json["Outputs"].(map[string]any)["OperatorPolicyArn"].(map[string]any)
	if b, _ := json.Marshal(out["Value"]); ref(out["Value"]) != policyID {
		t.Errorf("OperatorPolicyArn = %s, want the ARN of %s", b, policyID)
	}
}
