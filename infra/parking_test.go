package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The parking bucket holds tenants' results: a private bucket
// (checkPrivateBucket) whose objects under parked/ expire after 7 days,
// and no custom resource (autoDeleteObjects' Lambda) in the stack.
func TestParkingBucket(t *testing.T) {
	s := defaults(t)
	id, _ := parkBucket(t, s)
	checkPrivateBucket(t, s, id, map[string]any{
		"Id": "expire-parked", "Status": "Enabled", "Prefix": "parked/", "ExpirationInDays": 7.0,
		"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1.0},
	})
	if n := len(s.resources("AWS::Lambda::Function")); n != len(functionNames) {
		t.Errorf("%d functions, want the %d of the stack (no autoDeleteObjects custom resource)", n, len(functionNames))
	}
	for _, typ := range []string{"Custom::S3AutoDeleteObjects", "AWS::CloudFormation::CustomResource"} {
		if r := s.resources(typ); len(r) != 0 {
			t.Errorf("custom resources %v", sortedKeys(r))
		}
	}
	// The functions find it by its generated name.
	for _, fn := range functionNames {
		if env := functionEnv(t, s, fn); ref(env["AIJOBS_PARK_BUCKET"]) != id {
			t.Errorf("%s: AIJOBS_PARK_BUCKET = %v, want a reference to %s", fn, env["AIJOBS_PARK_BUCKET"], id)
		}
	}
	out, _ := s.json["Outputs"].(map[string]any)["ParkBucketName"].(map[string]any)
	if out == nil || ref(out["Value"]) != id {
		t.Errorf("output ParkBucketName %v, want the name of %s", out, id)
	}
}

// checkPrivateBucket checks a bucket of tenants' data (newPrivateBucket):
// S3-managed encryption, every public access blocked, ACLs off (bucket
// owner enforced), no versioning (a deleted or expired object leaves no
// version behind), rule its one lifecycle rule, no name (CloudFormation
// makes a unique one), no access logs, kept with the table, and TLS only
// (checkTLSOnly).
func checkPrivateBucket(t *testing.T, s *synthesized, id string, rule map[string]any) {
	t.Helper()
	props, _ := s.resources("AWS::S3::Bucket")[id]["Properties"].(map[string]any)
	if b, _ := json.MarshalIndent(props, "", "  "); testing.Verbose() {
		t.Logf("bucket %s: %s", id, b)
	}
	for _, k := range []string{"BucketName", "LoggingConfiguration"} {
		if props[k] != nil {
			t.Errorf("%s: %s %v, want none (CloudFormation names a bucket: names are global; no access logs)", id, k, props[k])
		}
	}
	want := map[string]any{
		"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
			map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
		}},
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
		"OwnershipControls":      map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
		"LifecycleConfiguration": map[string]any{"Rules": []any{rule}},
	}
	for k, w := range want {
		if !reflect.DeepEqual(props[k], w) {
			got, _ := json.Marshal(props[k])
			wb, _ := json.Marshal(w)
			t.Errorf("%s: %s = %s, want %s", id, k, got, wb)
		}
	}
	if v, ok := props["VersioningConfiguration"].(map[string]any); ok && v["Status"] == "Enabled" {
		t.Errorf("%s: versioning %v: a deleted object must not stay as a version", id, v)
	}
	// Kept with the table, and its TLS-only policy with it.
	policy := checkTLSOnly(t, s, id)
	for typ, r := range map[string]map[string]any{"bucket": s.resources("AWS::S3::Bucket")[id], "bucket policy": s.resources("AWS::S3::BucketPolicy")[policy]} {
		if r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s %s DeletionPolicy %v UpdateReplacePolicy %v, want Retain (kept with the table)", id, typ, r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
	}
}

// enforceSSL is the parking bucket's only policy (checkTLSOnly).
func TestParkingBucketIsTLSOnly(t *testing.T) {
	s := defaults(t)
	bucket, _ := parkBucket(t, s)
	checkTLSOnly(t, s, bucket)
}

// checkTLSOnly checks that bucket has one policy, with one statement
// refusing every request made without TLS, on the bucket and its
// objects, to anyone; no statement allows anything: the roles hold the
// grants. It is the policy's logical id.
func checkTLSOnly(t *testing.T, s *synthesized, bucket string) string {
	t.Helper()
	id, p := s.one(t, "AWS::S3::BucketPolicy", func(p map[string]any) bool { return ref(p["Bucket"]) == bucket })
	sts, _ := p["PolicyDocument"].(map[string]any)["Statement"].([]any)
	if len(sts) != 1 {
		t.Fatalf("%s: bucket policy statements %v, want the TLS-only one", bucket, sts)
	}
	st := sts[0].(map[string]any)
	var resources []string
	for _, r := range st["Resource"].([]any) {
		resources = append(resources, render(r))
	}
	cond, _ := json.Marshal(st["Condition"])
	if st["Effect"] != "Deny" || st["Action"] != "s3:*" || !reflect.DeepEqual(st["Principal"], map[string]any{"AWS": "*"}) ||
		string(cond) != `{"Bool":{"aws:SecureTransport":"false"}}` ||
		!equalSets(resources, []string{"${" + bucket + ".Arn}", "${" + bucket + ".Arn}/*"}) {
		b, _ := json.Marshal(st)
		t.Errorf("%s: bucket policy statement %s, want Deny s3:* to * on the bucket and its objects unless aws:SecureTransport", bucket, b)
	}
	return id
}

// parkBucket is the parking bucket: the one whose lifecycle expires
// parked/ (a stack with a Bedrock batch lane has a second bucket).
func parkBucket(t *testing.T, s *synthesized) (string, map[string]any) {
	t.Helper()
	return s.one(t, "AWS::S3::Bucket", lifecycleRule("expire-parked"))
}

// lifecycleRule picks a bucket by the id of its lifecycle rule.
func lifecycleRule(id string) func(map[string]any) bool {
	return func(p map[string]any) bool {
		lc, _ := p["LifecycleConfiguration"].(map[string]any)
		rules, _ := lc["Rules"].([]any)
		return len(rules) == 1 && rules[0].(map[string]any)["Id"] == id
	}
}
