package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The parking bucket holds tenants' results: S3-managed encryption, every
// public access blocked, ACLs off (bucket owner enforced), no versioning
// (a deleted outcome leaves no version behind), objects under parked/
// expired after 7 days and incomplete uploads aborted after 1, no name
// (CloudFormation makes a unique one), kept with the table, and no
// custom resource (autoDeleteObjects' Lambda) in the stack.
func TestParkingBucket(t *testing.T) {
	s := defaults(t)
	id, props := s.one(t, "AWS::S3::Bucket", nil)
	if b, _ := json.MarshalIndent(props, "", "  "); testing.Verbose() {
		t.Logf("bucket %s: %s", id, b)
	}
	if props["BucketName"] != nil {
		t.Errorf("BucketName %v: CloudFormation must name the bucket (S3 names are global)", props["BucketName"])
	}
	want := map[string]any{
		"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
			map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
		}},
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
		"OwnershipControls": map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
		"LifecycleConfiguration": map[string]any{"Rules": []any{map[string]any{
			"Id": "expire-parked", "Status": "Enabled", "Prefix": "parked/", "ExpirationInDays": 7.0,
			"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1.0},
		}}},
	}
	for k, w := range want {
		if !reflect.DeepEqual(props[k], w) {
			got, _ := json.Marshal(props[k])
			wb, _ := json.Marshal(w)
			t.Errorf("%s = %s, want %s", k, got, wb)
		}
	}
	if v, ok := props["VersioningConfiguration"].(map[string]any); ok && v["Status"] == "Enabled" {
		t.Errorf("versioning %v: a deleted outcome must not stay as a version", v)
	}
	// Kept with the table, and its TLS-only policy with it.
	for typ, r := range map[string]map[string]any{"bucket": s.resources("AWS::S3::Bucket")[id], "bucket policy": onlyResource(t, s, "AWS::S3::BucketPolicy")} {
		if r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s DeletionPolicy %v UpdateReplacePolicy %v, want Retain (kept with the table)", typ, r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
	}
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

// enforceSSL is the bucket's only policy: one statement refusing every
// request made without TLS, on the bucket and its objects, to anyone. No
// statement allows anything: the functions' roles hold the grants.
func TestParkingBucketIsTLSOnly(t *testing.T) {
	s := defaults(t)
	bucket, _ := s.one(t, "AWS::S3::Bucket", nil)
	_, p := s.one(t, "AWS::S3::BucketPolicy", nil)
	if ref(p["Bucket"]) != bucket {
		t.Errorf("bucket policy on %v, want %s", p["Bucket"], bucket)
	}
	sts, _ := p["PolicyDocument"].(map[string]any)["Statement"].([]any)
	if len(sts) != 1 {
		t.Fatalf("bucket policy statements %v, want the TLS-only one", sts)
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
		t.Errorf("bucket policy statement %s, want Deny s3:* to * on the bucket and its objects unless aws:SecureTransport", b)
	}
}

// onlyResource is the whole template entry (policies and metadata
// included) of the only resource of a type.
func onlyResource(t *testing.T, s *synthesized, typ string) map[string]any {
	t.Helper()
	id, _ := s.one(t, typ, nil)
	return s.resources(typ)[id]
}
