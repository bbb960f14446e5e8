package main

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// bedrockBatchRoutes offer two Bedrock batch lanes: a foundation model's
// on a provider in the stack's Region ("default"), and a US inference
// profile's on a provider that names us-east-1 ("claude"); "direct" calls
// a Bedrock model only in the standard lane.
const bedrockBatchRoutes = `{
  "providers": {
    "bedrock":      {"kind": "bedrock"},
    "bedrock-east": {"kind": "bedrock", "region": "us-east-1"}
  },
  "routes": {
    "default": {"rungs": [{"provider": "bedrock", "model": "amazon.nova-lite-v1:0", "price": {"input": "6", "output": "24"},
                           "lanes": {"batch": {"price": {"input": "3", "output": "12"}, "p99": "24h"}}}]},
    "claude":  {"rungs": [{"provider": "bedrock-east", "model": "us.anthropic.claude-haiku-4-5-20251001-v1:0", "price": {"input": "100", "output": "500"},
                           "lanes": {"batch": {"price": {"input": "50", "output": "250"}, "p99": "24h"}}}]},
    "direct":  {"rungs": [{"provider": "bedrock", "model": "amazon.nova-pro-v1:0", "price": {"input": "80", "output": "320"}}]}
  }
}`

// The resources bedrockBatchRoutes' lanes name, as the stack grants them,
// and the batch inference jobs of the stack's Region.
const (
	batchNovaLite      = "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/amazon.nova-lite-v1:0"
	batchProfile       = "arn:${AWS::Partition}:bedrock:us-east-1:${AWS::AccountId}:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0"
	batchProfileModels = "arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"
	batchJobs          = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:model-invocation-job/*"
)

// bedrockBatched is the stack with bedrockBatchRoutes, synthesized once.
func bedrockBatched(t *testing.T) *synthesized {
	t.Helper()
	return bedrockBatchedStack.withRoutes(t, "bedrock-batched", bedrockBatchRoutes)
}

var bedrockBatchedStack sharedStack

// batchBucket is the Bedrock batch lanes' bucket: the one whose lifecycle
// expires batches/.
func batchBucket(t *testing.T, s *synthesized) string {
	t.Helper()
	id, _ := s.one(t, "AWS::S3::Bucket", lifecycleRule("expire-batches"))
	return id
}

// batchServiceRole is the role Bedrock assumes: the one whose trust
// policy names bedrock.amazonaws.com.
func batchServiceRole(t *testing.T, s *synthesized) (string, map[string]any) {
	t.Helper()
	return s.one(t, "AWS::IAM::Role", trusts("bedrock.amazonaws.com"))
}

// trusts picks a role whose trust policy names service.
func trusts(service string) func(map[string]any) bool {
	return func(p map[string]any) bool {
		b, _ := json.Marshal(p["AssumeRolePolicyDocument"])
		return strings.Contains(string(b), `"Service":"`+service+`"`)
	}
}

// Only a batch lane on a bedrock provider brings the batch bucket, its
// service role, their output, the variables that name them and the
// Region rule (here, a provider names its Region); the defaults, routes
// on Bedrock without a batch lane, and batch lanes on the fake and
// OpenAI have none of them.
func TestBedrockBatchOnlyWithABedrockBatchLane(t *testing.T) {
	for name, tc := range map[string]struct {
		s    *synthesized
		want int
	}{"defaults": {defaults(t), 0}, "routes": {routed(t), 0}, "batch lanes": {batched(t), 0}, "bedrock batch lanes": {bedrockBatched(t), 1}} {
		s := tc.s
		count := func(typ string, pick func(map[string]any) bool) int {
			n := 0
			for _, r := range s.resources(typ) {
				if p, _ := r["Properties"].(map[string]any); pick(p) {
					n++
				}
			}
			return n
		}
		_, output := s.json["Outputs"].(map[string]any)["BatchBucketName"]
		rules, _ := s.json["Rules"].(map[string]any)
		_, rule := rules["BedrockBatchRegion"]
		env := 0
		for _, fn := range functionNames {
			if functionEnv(t, s, fn)["AIJOBS_BATCH_ROLE_ARN"] != nil || functionEnv(t, s, fn)["AIJOBS_BATCH_BUCKET"] != nil {
				env++
			}
		}
		envs := -1 // some functions have them, others not
		switch env {
		case 0:
			envs = 0
		case len(functionNames):
			envs = 1
		}
		for what, n := range map[string]int{
			"bucket":       count("AWS::S3::Bucket", lifecycleRule("expire-batches")),
			"service role": count("AWS::IAM::Role", trusts("bedrock.amazonaws.com")),
			"output":       map[bool]int{false: 0, true: 1}[output],
			"Region rule":  map[bool]int{false: 0, true: 1}[rule],
			"environment":  envs,
		} {
			if n != tc.want {
				t.Errorf("%s: %d batch %s, want %d", name, n, what, tc.want)
			}
		}
	}
}

// The batch bucket holds tenants' prompts and answers: a private bucket
// like the parking lot (checkPrivateBucket), its files under batches/
// expired after 30 days (batchesExpiry), and its name in the output.
func TestBatchBucket(t *testing.T) {
	s := bedrockBatched(t)
	id := batchBucket(t, s)
	checkPrivateBucket(t, s, id, map[string]any{
		"Id": "expire-batches", "Status": "Enabled", "Prefix": "batches/", "ExpirationInDays": 30.0,
		"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1.0},
	})
	out, _ := s.json["Outputs"].(map[string]any)["BatchBucketName"].(map[string]any)
	if out == nil || ref(out["Value"]) != id {
		t.Errorf("output BatchBucketName %v, want the name of %s", out, id)
	}
}

// Only Bedrock may assume the service role, and only for this account's
// batch inference jobs in the stack's Region: the trust policy's
// aws:SourceAccount and aws:SourceArn (Bedrock User Guide, "Create a
// custom service role for batch inference"), evaluated as IAM would.
func TestBatchServiceRoleTrust(t *testing.T) {
	s := bedrockBatched(t)
	_, role := batchServiceRole(t, s)
	doc := role["AssumeRolePolicyDocument"]
	if n := len(doc.(map[string]any)["Statement"].([]any)); n != 1 {
		t.Fatalf("%d trust statements, want one", n)
	}
	assume := func(service, account, source string) request {
		ctx := map[string]string{}
		if account != "" {
			ctx["aws:SourceAccount"] = account
		}
		if source != "" {
			ctx["aws:SourceArn"] = source
		}
		return request{service: service, action: "sts:AssumeRole", resource: "arn:aws:iam::111122223333:role/batch", context: ctx}
	}
	job := "arn:aws:bedrock:us-east-1:111122223333:model-invocation-job/a1b2c3d4e5f6"
	for what, tc := range map[string]struct {
		req  request
		want bool
	}{
		"a batch job of ours":        {assume("bedrock.amazonaws.com", "111122223333", job), true},
		"another account's":          {assume("bedrock.amazonaws.com", "444455556666", strings.Replace(job, "111122223333", "444455556666", 1)), false},
		"claiming our account":       {assume("bedrock.amazonaws.com", "111122223333", strings.Replace(job, "111122223333", "444455556666", 1)), false},
		"another Region's job":       {assume("bedrock.amazonaws.com", "111122223333", strings.Replace(job, "us-east-1", "us-west-2", 1)), false},
		"a model customization job":  {assume("bedrock.amazonaws.com", "111122223333", strings.Replace(job, "model-invocation-job", "model-customization-job", 1)), false},
		"no source named":            {assume("bedrock.amazonaws.com", "", ""), false},
		"another service, our job":   {assume("lambda.amazonaws.com", "111122223333", job), false},
		"the source account only":    {assume("bedrock.amazonaws.com", "111122223333", ""), false},
		"an agent of ours (Bedrock)": {assume("bedrock.amazonaws.com", "111122223333", "arn:aws:bedrock:us-east-1:111122223333:agent/AGENT1"), false},
	} {
		if got, why := allows(t, doc, tc.req, nil); got != tc.want {
			t.Errorf("%s: assume %v (%s), want %v", what, got, why, tc.want)
		}
	}
}

// The service role may read, write and list the batch bucket's batches/
// in this account, and invoke the inference profile a batch lane names
// with its model in every Region (its statements, exactly); nothing for a
// foundation model named directly (the User Guide asks for none), nothing
// of the standard lane's models, no other key or bucket.
func TestBatchServiceRoleGrants(t *testing.T) {
	s := bedrockBatched(t)
	id, _ := batchServiceRole(t, s)
	bucket := batchBucket(t, s)
	ours := " if StringEquals aws:ResourceAccount=${AWS::AccountId}"
	want := []string{
		"s3:GetObject on ${" + bucket + ".Arn}/batches/*" + ours, "s3:PutObject on ${" + bucket + ".Arn}/batches/*" + ours,
		"s3:ListBucket on " + bucket + ours,
		"bedrock:InvokeModel on " + batchProfile, "bedrock:InvokeModel on " + batchProfileModels,
	}
	if got := grants(t, s, id); !equalSets(got, want) {
		t.Errorf("the service role may\n  %s\nwant exactly\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	env := roleEnv(s)
	doc := s.resources("AWS::IAM::Role")[id]["Properties"].(map[string]any)["Policies"].([]any)[0].(map[string]any)["PolicyDocument"]
	object := env[bucket+".Arn"] + "/batches/b_01/"
	park, _ := parkBucket(t, s)
	model := func(region, m string) string { return "arn:aws:bedrock:" + region + "::foundation-model/" + m }
	haiku := "anthropic.claude-haiku-4-5-20251001-v1:0"
	callCheck{"the service role", doc, env, map[string]string{"aws:ResourceAccount": "111122223333"}}.check(t, map[string][]string{
		object + "input.jsonl":             {"s3:GetObject"},
		object + "output/job1/x.jsonl.out": {"s3:PutObject"},
		env[bucket+".Arn"]:                 {"s3:ListBucket"},
		resolve(t, sub(batchProfile), env): {"bedrock:InvokeModel"},
		model("us-west-2", haiku):          {"bedrock:InvokeModel"},
		model("us-east-2", haiku):          {"bedrock:InvokeModel"},
	}, map[string][]string{
		object + "input.jsonl":                                          {"s3:DeleteObject", "s3:GetObjectAcl", "s3:PutObjectAcl"},
		env[bucket+".Arn"] + "/parked/job_1/owner":                      {"s3:GetObject", "s3:PutObject"},
		env[park+".Arn"] + "/batches/b_01/x":                            {"s3:GetObject", "s3:PutObject"},
		env[park+".Arn"]:                                                {"s3:ListBucket"},
		model("us-east-1", "amazon.nova-lite-v1:0"):                     {"bedrock:InvokeModel"},
		model("us-east-1", "amazon.nova-pro-v1:0"):                      {"bedrock:InvokeModel"},
		model("us-west-2", "anthropic.claude-sonnet-4-5-20250929-v1:0"): {"bedrock:InvokeModel"},
		resolve(t, sub(batchProfile), env):                              {"bedrock:InvokeModelWithResponseStream", "bedrock:CreateModelInvocationJob"},
		"arn:aws:iam::111122223333:role/x":                              {"iam:PassRole"},
	})
	// In another account's bucket of the same name, nothing.
	if ok, why := allows(t, doc, request{identity: true, action: "s3:GetObject", resource: object + "input.jsonl",
		context: map[string]string{"aws:ResourceAccount": "444455556666"}}, env); ok {
		t.Errorf("the service role may read another account's bucket of that name (%s)", why)
	}
}

// sub is an ARN template as the template holds it (Fn::Sub).
func sub(template string) map[string]any { return map[string]any{"Fn::Sub": template} }

// callCheck is who may make which calls under one identity policy, doc,
// with the stack's resources resolved by env, each call made with
// context.
type callCheck struct {
	who     string
	doc     any
	env     map[string]string
	context map[string]string
}

// check evaluates every call of may (to be allowed) and mayNot (to be
// denied).
func (c callCheck) check(t *testing.T, may, mayNot map[string][]string) {
	t.Helper()
	for want, calls := range map[bool]map[string][]string{true: may, false: mayNot} {
		for resource, actions := range calls {
			for _, a := range actions {
				if ok, why := allows(t, c.doc, request{identity: true, action: a, resource: resource, context: c.context}, c.env); ok != want {
					t.Errorf("%s may %s on %s: %v (%s), want %v", c.who, a, resource, ok, why, want)
				}
			}
		}
	}
}

// The collector gets exactly what a Bedrock batch lane calls, beside what
// every collector gets (collectorGrants): making and polling the stack's
// Region's batch jobs on the lanes' models (the profile, and its model in
// every Region), passing the service role to Bedrock only, writing a
// batch's input, reading and listing its output. The worker, the API,
// the reconciler and the notifier get none of it: the worker only its
// models as with any Bedrock route.
func TestBedrockBatchCollectorGrantsAreExact(t *testing.T) {
	s := bedrockBatched(t)
	bucket := batchBucket(t, s)
	role, _ := batchServiceRole(t, s)
	want := basePermissions(t, s)
	want["collector"] = append(collectorGrants(t, s),
		"bedrock:CreateModelInvocationJob on "+batchJobs, "bedrock:CreateModelInvocationJob on "+batchNovaLite,
		"bedrock:CreateModelInvocationJob on "+batchProfile, "bedrock:CreateModelInvocationJob on "+batchProfileModels,
		"bedrock:GetModelInvocationJob on "+batchJobs,
		"iam:PassRole on "+role+" if StringEquals iam:PassedToService=bedrock.amazonaws.com",
		"s3:PutObject on ${"+bucket+".Arn}/batches/*/input.jsonl",
		"s3:GetObject on ${"+bucket+".Arn}/batches/*/output/*",
		"s3:ListBucket on "+bucket+" if StringLike s3:prefix=batches/*/output/*")
	for _, a := range bedrockActions {
		want["worker"] = append(want["worker"], a+" on "+batchNovaLite, a+" on "+batchProfile,
			a+" on "+strings.Replace(batchNovaLite, "nova-lite", "nova-pro", 1),
			a+" on "+batchProfileModels+" if ArnLike bedrock:InferenceProfileArn="+batchProfile)
	}
	for fn, w := range want {
		id, group := roleOf(t, s, fn)
		w = append(w, "logs:CreateLogStream on "+group, "logs:PutLogEvents on "+group)
		if got := grants(t, s, id); !equalSets(got, w) {
			t.Errorf("%s may\n  %s\nwant exactly\n  %s", fn, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
		}
	}
	if n := len(s.resources("AWS::IAM::Role")); n != len(want)+1 {
		t.Errorf("%d roles, want the %d function roles and the service role", n, len(want))
	}
}

// The collector's role with a Bedrock batch lane, evaluated as IAM would:
// every call a Bedrock batch makes (pkg/model/bedrock's submit, poll and
// results), and none of their neighbours: no job in another Region or
// account, no stop or list, no model of the standard lane, no invoking,
// no passing the role to another service or another role, no key but a
// batch's input written and its output read and listed.
func TestBedrockBatchCollectorPolicySimulation(t *testing.T) {
	s := bedrockBatched(t)
	env := roleEnv(s)
	id, _ := roleOf(t, s, collectorName)
	doc := s.resources("AWS::IAM::Role")[id]["Properties"].(map[string]any)["Policies"].([]any)[0].(map[string]any)["PolicyDocument"]
	bucket := env[batchBucket(t, s)+".Arn"]
	service, _ := batchServiceRole(t, s)
	worker, _ := roleOf(t, s, "worker")
	job := "arn:aws:bedrock:us-east-1:111122223333:model-invocation-job/a1b2c3d4e5f6"
	model := func(region, m string) string { return "arn:aws:bedrock:" + region + "::foundation-model/" + m }
	haiku := "anthropic.claude-haiku-4-5-20251001-v1:0"
	output := "batches/b_01/output/a1b2c3d4e5f6/"
	callCheck{"the collector", doc, env, nil}.check(t, map[string][]string{
		job: {"bedrock:CreateModelInvocationJob", "bedrock:GetModelInvocationJob"},
		model("us-east-1", "amazon.nova-lite-v1:0"): {"bedrock:CreateModelInvocationJob"},
		resolve(t, sub(batchProfile), env):          {"bedrock:CreateModelInvocationJob"},
		model("us-west-2", haiku):                   {"bedrock:CreateModelInvocationJob"},
		bucket + "/batches/b_01/input.jsonl":        {"s3:PutObject"},
		bucket + "/" + output + "input.jsonl.out":   {"s3:GetObject"},
	}, map[string][]string{
		strings.Replace(job, "us-east-1", "us-west-2", 1):       {"bedrock:CreateModelInvocationJob", "bedrock:GetModelInvocationJob"},
		strings.Replace(job, "111122223333", "444455556666", 1): {"bedrock:GetModelInvocationJob"},
		job: {"bedrock:StopModelInvocationJob", "bedrock:ListModelInvocationJobs", "bedrock:InvokeModel"},
		"*": {"bedrock:ListModelInvocationJobs"},
		model("us-east-1", "amazon.nova-pro-v1:0"):                      {"bedrock:CreateModelInvocationJob"},
		model("us-east-1", "amazon.nova-lite-v1:0"):                     {"bedrock:InvokeModel"},
		model("us-west-2", "anthropic.claude-sonnet-4-5-20250929-v1:0"): {"bedrock:CreateModelInvocationJob"},
		resolve(t, sub(batchProfile), env):                              {"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"},
		bucket + "/batches/b_01/input.jsonl":                            {"s3:GetObject", "s3:DeleteObject"},
		bucket + "/" + output + "input.jsonl.out":                       {"s3:PutObject", "s3:DeleteObject"},
		bucket + "/batches/b_01/other.jsonl":                            {"s3:PutObject", "s3:GetObject"},
		bucket + "/parked/job_1/owner":                                  {"s3:PutObject", "s3:GetObject"},
		env[worker+".Arn"]:                                              {"iam:PassRole"},
	})
	pass := func(role, to string) request {
		return request{identity: true, action: "iam:PassRole", resource: env[role+".Arn"], context: map[string]string{"iam:PassedToService": to}}
	}
	list := func(prefix string) request {
		return request{identity: true, action: "s3:ListBucket", resource: bucket, context: map[string]string{"s3:prefix": prefix}}
	}
	for what, tc := range map[string]struct {
		req  request
		want bool
	}{
		"pass the service role to Bedrock":     {pass(service, "bedrock.amazonaws.com"), true},
		"pass it to Lambda":                    {pass(service, "lambda.amazonaws.com"), false},
		"pass it to nobody named":              {request{identity: true, action: "iam:PassRole", resource: env[service+".Arn"]}, false},
		"pass the worker's role to Bedrock":    {pass(worker, "bedrock.amazonaws.com"), false},
		"list a batch's output":                {list(output), true},
		"list every batch":                     {list("batches/"), false},
		"list the bucket":                      {list(""), false},
		"list parked outcomes":                 {list("parked/"), false},
		"list with no prefix named":            {request{identity: true, action: "s3:ListBucket", resource: bucket}, false},
		"list the parking bucket's batch keys": {request{identity: true, action: "s3:ListBucket", resource: env[mustPark(t, s)+".Arn"], context: map[string]string{"s3:prefix": output}}, false},
	} {
		if got, why := allows(t, doc, tc.req, env); got != tc.want {
			t.Errorf("%s: %v (%s), want %v", what, got, why, tc.want)
		}
	}
}

// mustPark is the parking bucket's logical id.
func mustPark(t *testing.T, s *synthesized) string {
	t.Helper()
	id, _ := parkBucket(t, s)
	return id
}

// Every function is told the bucket and the service role (every one's
// config.Load wants the role named with a Bedrock batch lane, and each
// loads its environment back to the stack's settings); the size check
// covers both; the context may set neither.
func TestBedrockBatchEnvironment(t *testing.T) {
	s := bedrockBatched(t)
	bucket := batchBucket(t, s)
	role, _ := batchServiceRole(t, s)
	for _, fn := range append(slices.Clone(functionNames), collectorName) {
		env := functionEnv(t, s, fn)
		roleArn, _ := env["AIJOBS_BATCH_ROLE_ARN"].(map[string]any)["Fn::GetAtt"].([]any)
		if ref(env["AIJOBS_BATCH_BUCKET"]) != bucket || len(roleArn) != 2 || roleArn[0] != role || roleArn[1] != "Arn" {
			t.Errorf("%s: AIJOBS_BATCH_BUCKET %v, AIJOBS_BATCH_ROLE_ARN %v, want %s's name and %s's ARN", fn,
				env["AIJOBS_BATCH_BUCKET"], env["AIJOBS_BATCH_ROLE_ARN"], bucket, role)
		}
		loaded := loadEnv(t, fn, env)
		if got := loaded.BedrockBatchProviders(); !reflect.DeepEqual(got, []string{"bedrock", "bedrock-east"}) {
			t.Errorf("%s: Bedrock batch providers %v", fn, got)
		}
		got, want := loaded.Settings, s.cfg.Settings
		got.APIMemoryMB, got.WorkerMemoryMB, got.APITimeout = want.APIMemoryMB, want.WorkerMemoryMB, want.APITimeout
		got.ReconcilerMemoryMB, got.ReconcilerTimeout = want.ReconcilerMemoryMB, want.ReconcilerTimeout
		got.CollectorTimeout, got.CollectorMemoryMB = want.CollectorTimeout, want.CollectorMemoryMB
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s loads settings\n%+v\nthe stack was built from\n%+v", fn, got, want)
		}
	}
	if c, w := functionEnv(t, s, collectorName), functionEnv(t, s, "worker"); !reflect.DeepEqual(c, w) {
		t.Errorf("collector environment %v, want the worker's %v", c, w)
	}
	// A role name CloudFormation makes is at most 64 characters; a bucket
	// name at most 63.
	real := len("AIJOBS_BATCH_BUCKET") + 63 + len("AIJOBS_BATCH_ROLE_ARN") + len("arn:aws-us-gov:iam::123456789012:role/") + 64
	if n := batchEnvSize(s.cfg); n < real {
		t.Errorf("batchEnvSize %d is below a real environment's %d", n, real)
	}
	if n := batchEnvSize(batched(t).cfg); n != 0 {
		t.Errorf("batchEnvSize %d without a Bedrock batch lane, want 0", n)
	}
}

// A provider that names a Region holds the stack to it: CloudFormation
// refuses to deploy elsewhere (the collector calls Bedrock and the bucket
// in the provider's Region). Providers in two Regions are refused at
// synth; a provider in the stack's own Region (none named) needs no rule,
// and a lane on a foundation model gives the service role nothing but
// the bucket. A throwaway stack deletes the bucket and its policy.
func TestBedrockBatchRegion(t *testing.T) {
	s := bedrockBatched(t)
	rule, _ := s.json["Rules"].(map[string]any)["BedrockBatchRegion"].(map[string]any)
	assertions, _ := rule["Assertions"].([]any)
	b, _ := json.Marshal(assertions)
	if len(assertions) != 1 || !strings.Contains(string(b), `"Assert":{"Fn::Equals":[{"Ref":"AWS::Region"},"us-east-1"]}`) {
		t.Errorf("Region rule %s, want the stack's Region to equal us-east-1", b)
	}
	two := strings.Replace(bedrockBatchRoutes, `"kind": "bedrock"}`, `"kind": "bedrock", "region": "eu-west-1"}`, 1)
	if _, err := LoadConfig(mapLookup(testContext(t, map[string]any{"AIJOBS_ROUTES": two}))); err == nil ||
		!strings.Contains(err.Error(), "regions eu-west-1, us-east-1") {
		t.Errorf("LoadConfig with Bedrock batch lanes in two Regions = %v, want it refused", err)
	}
	one := `{"providers":{"br":{"kind":"bedrock"}},"routes":{"default":{"rungs":[{"provider":"br","model":"amazon.nova-lite-v1:0",` +
		`"price":{"input":"6","output":"24"},"lanes":{"batch":{"price":{"input":"3","output":"12"},"p99":"24h"}}}]}}}`
	plain := build(t, map[string]any{"AIJOBS_ROUTES": one, "throwaway": "true"}, false)
	if rules, _ := plain.json["Rules"].(map[string]any); rules["BedrockBatchRegion"] != nil {
		t.Errorf("a rule %v without a provider Region", rules["BedrockBatchRegion"])
	}
	id, _ := batchServiceRole(t, plain)
	gs := grants(t, plain, id)
	if len(gs) == 0 {
		t.Error("the service role of a foundation model's lane may do nothing: it could not read its input")
	}
	for _, g := range gs {
		if !strings.HasPrefix(g, "s3:") {
			t.Errorf("the service role of a foundation model's lane may %s", g)
		}
	}
	bucket := batchBucket(t, plain)
	policy, _ := plain.one(t, "AWS::S3::BucketPolicy", func(p map[string]any) bool { return ref(p["Bucket"]) == bucket })
	for _, r := range []map[string]any{plain.resources("AWS::S3::Bucket")[bucket], plain.resources("AWS::S3::BucketPolicy")[policy]} {
		if r["DeletionPolicy"] != "Delete" {
			t.Errorf("throwaway batch bucket: DeletionPolicy %v", r["DeletionPolicy"])
		}
	}
}

// nagFinding is one resource a role's suppression applies to, and why.
type nagFinding struct{ role, finding, reason string }

// batchNagFindings are the IAM5 findings a Bedrock batch lane's
// suppressions name (none without one): the service role's batches/*
// and profile models, the collector's input and output keys, jobs and
// profile models.
func batchNagFindings(t *testing.T, s *synthesized) []nagFinding {
	t.Helper()
	if len(bedrockBatchProviders(s.cfg)) == 0 {
		return nil
	}
	bucket := batchBucket(t, s)
	keys := func(k string) string { return objectsNagResource(bucket, k) }
	return []nagFinding{
		{"BatchServiceRole", keys("batches/*"), batchKeysWildcardReason},
		{"BatchServiceRole", nagResource(batchProfileModels), batchProfileWildcardReason},
		{"CollectorRole", keys("batches/*/input.jsonl"), batchKeysWildcardReason},
		{"CollectorRole", keys("batches/*/output/*"), batchKeysWildcardReason},
		{"CollectorRole", nagResource(batchJobs), batchKeysWildcardReason},
		{"CollectorRole", nagResource(batchProfileModels), batchProfileWildcardReason},
	}
}

// checkBatchSuppressions checks a Bedrock batch lane's suppressions and
// removes them from got: S1 (no access logs) on the batch bucket, and
// IAM5 on the service role and the collector's role for exactly
// batchNagFindings, each reason once per role.
func checkBatchSuppressions(t *testing.T, s *synthesized, got map[string][]map[string]any) {
	t.Helper()
	findings := batchNagFindings(t, s)
	if findings == nil {
		return
	}
	bucket := batchBucket(t, s)
	if r := got[bucket]; len(r) != 1 || r[0]["id"] != "AwsSolutions-S1" || r[0]["reason"] != batchAccessLogsReason || r[0]["applies_to"] != nil {
		t.Errorf("batch bucket suppresses %v, want exactly S1 for %q", r, batchAccessLogsReason)
	}
	delete(got, bucket)
	service, _ := batchServiceRole(t, s)
	collector, _ := roleOf(t, s, collectorName)
	ids := map[string]string{"BatchServiceRole": service, "CollectorRole": collector}
	applies := map[[2]string][]string{}
	for _, f := range findings {
		k := [2]string{f.role, f.reason}
		applies[k] = append(applies[k], f.finding)
	}
	for _, k := range slices.SortedFunc(maps.Keys(applies), func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) }) {
		if n := takeSuppression(got, ids[k[0]], k[1], "AwsSolutions-IAM5", applies[k]...); n != 1 {
			t.Errorf("%s: %d suppressions for %q, want one: IAM5 applying to exactly %v", k[0], n, k[1], applies[k])
		}
	}
}
