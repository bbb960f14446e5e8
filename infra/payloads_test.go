package main

import (
	"testing"
)

// payloadBucket is the payload bucket's logical id and properties.
func payloadBucket(t *testing.T, s *synthesized) (string, map[string]any) {
	t.Helper()
	return s.one(t, "AWS::S3::Bucket", func(p map[string]any) bool {
		lc, _ := p["LifecycleConfiguration"].(map[string]any)
		rules, _ := lc["Rules"].([]any)
		return len(rules) > 0 && rules[0].(map[string]any)["Id"] == "expire-inputs"
	})
}

// payloadGrants are what each function may call on the payload bucket
// (docs/payloads.md, "Grants"): by prefix, and ListBucket on the bucket
// for those that read a key that may be missing.
func payloadGrants(t *testing.T, s *synthesized) map[string][]string {
	t.Helper()
	b, _ := payloadBucket(t, s)
	keys := func(prefix string) string { return "${" + b + ".Arn}/" + prefix + "*" }
	list := "s3:ListBucket on " + b
	return map[string][]string{
		"api": {"s3:PutObject on " + keys("inputs/"), "s3:PutObject on " + keys("uploads/"), // a large input; the uploads it signs
			"s3:GetObject on " + keys("uploads/"), "s3:GetObject on " + keys("results/"), list},
		"worker":    {"s3:GetObject on " + keys("inputs/"), "s3:PutObject on " + keys("results/"), list},
		"collector": {"s3:GetObject on " + keys("inputs/"), "s3:PutObject on " + keys("results/"), list}, // a batch's large answers
		"notifier":  {"s3:GetObject on " + keys("results/")},
	}
}

// payloadNagLines are the IAM5 suppressions of the payload prefixes each
// role holds, and S1 on the bucket.
func payloadNagLines(t *testing.T, s *synthesized, line func(rule, path, finding, reason string) string) map[string]string {
	t.Helper()
	b, _ := payloadBucket(t, s)
	want := map[string]string{line("AwsSolutions-S1", "PayloadBucket", "", payloadAccessLogsReason): "S1 on the payload bucket"}
	roles := map[string][]string{"ApiRole": {"inputs/", "uploads/", "results/"}, "WorkerRole": {"inputs/", "results/"}, "NotifierRole": {"results/"}}
	if len(s.resources("AWS::Lambda::Function")) > len(functionNames) {
		roles["CollectorRole"] = []string{"inputs/", "results/"}
	}
	for role, prefixes := range roles {
		for _, p := range prefixes {
			want[line("AwsSolutions-IAM5", role, objectsNagResource(b, p+"*"), payloadWildcardReason)] = "IAM5 on " + p + "* on " + role
		}
	}
	return want
}

// checkPayloadSuppressions checks the payload bucket's suppressions and
// removes them from got: S1 on the bucket, and on each role IAM5 for
// exactly the prefixes it is granted.
func checkPayloadSuppressions(t *testing.T, s *synthesized, got map[string][]map[string]any) {
	t.Helper()
	b, _ := payloadBucket(t, s)
	if r := got[b]; len(r) != 1 || r[0]["id"] != "AwsSolutions-S1" || r[0]["reason"] != payloadAccessLogsReason {
		t.Errorf("payload bucket suppresses %v, want exactly S1 for %q", r, payloadAccessLogsReason)
	}
	delete(got, b)
	fns := map[string][]string{"api": {"inputs/", "uploads/", "results/"}, "worker": {"inputs/", "results/"}, "notifier": {"results/"}}
	if len(s.resources("AWS::Lambda::Function")) > len(functionNames) {
		fns["collector"] = []string{"inputs/", "results/"}
	}
	for fn, prefixes := range fns {
		role, _ := roleOf(t, s, fn)
		applies := make([]string, len(prefixes))
		for i, p := range prefixes {
			applies[i] = objectsNagResource(b, p+"*")
		}
		if n := takeSuppression(got, role, payloadWildcardReason, "AwsSolutions-IAM5", applies...); n != 1 {
			t.Errorf("%s: %d payload suppressions, want one: IAM5 applying to exactly %v", fn, n, applies)
		}
	}
}

// The payload bucket expires each prefix on its own clock: inputs and
// answers when no record can point at them any more (the longest deadline
// plus the failed retention, plus a week: 98 days by default), uploads
// after a day.
func TestPayloadBucketExpiresEachPrefix(t *testing.T) {
	s := defaults(t)
	_, p := payloadBucket(t, s)
	rules := p["LifecycleConfiguration"].(map[string]any)["Rules"].([]any)
	want := map[string]float64{"inputs/": 98, "results/": 98, "uploads/": 1}
	if len(rules) != len(want) {
		t.Fatalf("%d lifecycle rules, want %d", len(rules), len(want))
	}
	for _, r := range rules {
		r := r.(map[string]any)
		prefix, _ := r["Prefix"].(string)
		if days := num(t, r["ExpirationInDays"], "ExpirationInDays"); days != want[prefix] || r["Status"] != "Enabled" {
			t.Errorf("rule %v: %v days, want %v", r["Id"], days, want[prefix])
		}
	}
	if p["VersioningConfiguration"] != nil {
		t.Errorf("versioning %v: a version kept would be a tenant's input kept past its record", p["VersioningConfiguration"])
	}
}
