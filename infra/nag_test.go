package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// Every AwsSolutions rule passes, in the default stack, in the variant
// with every option switched on, and with model routes; the only
// suppressions there can be are the ones TestNagSuppressionsArePinned
// pins: no automatic rotation of the webhook signing secret and its seed,
// the parking bucket's (no access logs; the parked/* keys), and the
// inference profiles' models.
func TestNoUnsuppressedNagFindings(t *testing.T) {
	for name, synth := range map[string]func(t *testing.T) *synthesized{
		"defaults": func(t *testing.T) *synthesized { return build(t, nil, true) },
		"every option": func(t *testing.T) *synthesized {
			return build(t, map[string]any{"throwaway": "true", "jwtIssuer": "https://issuer.example.com/", "jwtAudience": "aijobs",
				"alarmEmail": "ops@example.com"}, true)
		},
		"routes": routed,
	} {
		t.Run(name, func(t *testing.T) {
			s := synth(t)
			must(t, "annotations", func() {
				a := assertions.Annotations_FromStack(s.stack)
				for kind, found := range map[string]int{
					"error":   len(*a.FindError(jsii.String("*"), assertions.Match_AnyValue())),
					"warning": len(*a.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))),
				} {
					if found > 0 {
						t.Errorf("%d unsuppressed %s annotations", found, kind)
					}
				}
				for _, m := range *a.FindError(jsii.String("*"), assertions.Match_AnyValue()) {
					b, _ := json.Marshal(m)
					t.Logf("error: %s", b)
				}
				for _, m := range *a.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
					b, _ := json.Marshal(m)
					t.Logf("warning: %s", b)
				}
			})
			// The checks ran: cdk-nag's report lists the rules it applied,
			// and none is non-compliant; only the pinned one is suppressed.
			reports, _ := filepath.Glob(filepath.Join(s.outdir, "AwsSolutions-*NagReport.csv"))
			if len(reports) != 1 {
				t.Fatalf("nag reports %v", reports)
			}
			b, err := os.ReadFile(reports[0])
			if err != nil {
				t.Fatal(err)
			}
			report := string(b)
			for _, rule := range []string{"AwsSolutions-IAM4", "AwsSolutions-IAM5", "AwsSolutions-APIG4", "AwsSolutions-SQS3", "AwsSolutions-DDB3",
				"AwsSolutions-S1", "AwsSolutions-S2", "AwsSolutions-S10"} {
				if !strings.Contains(report, `"`+rule+`"`) {
					t.Errorf("the nag report does not mention %s", rule)
				}
			}
			// A suppressed finding's line names it: "[Resource::...] reason".
			prefix := `"AwsSolutions-IAM5","` + s.cfg.StackName + `/WorkerRole/Resource","Suppressed","[`
			suppressed := map[string]bool{}
			rotation := map[string]bool{}
			bucket, _ := s.one(t, "AWS::S3::Bucket", nil)
			parking := map[string]bool{}
			parkingLines := map[string]string{
				"ParkBucket": `"AwsSolutions-S1","` + s.cfg.StackName + `/ParkBucket/Resource","Suppressed","` + parkAccessLogsReason + `",`,
			}
			for _, role := range []string{"WorkerRole", "ReconcilerRole"} {
				parkingLines[role] = `"AwsSolutions-IAM5","` + s.cfg.StackName + "/" + role + `/Resource","Suppressed","[` +
					parkedNagResource(bucket) + "] " + parkedWildcardReason + `",`
			}
		lines:
			for _, line := range strings.Split(report, "\n")[1:] {
				if line == "" || strings.Contains(line, `","Compliant","N/A",`) {
					continue
				}
				for what, want := range parkingLines {
					if strings.HasPrefix(line, want) {
						parking[what] = true
						continue lines
					}
				}
				if secret, ok := strings.CutPrefix(line, `"AwsSolutions-SMG4","`+s.cfg.StackName+"/"); ok &&
					strings.Contains(secret, `/Resource","Suppressed","`+webhookRotationReason+`"`) {
					rotation[secret[:strings.Index(secret, "/")]] = true
					continue
				}
				if finding, _, ok := strings.Cut(strings.TrimPrefix(line, prefix), "]"); ok && name == "routes" && strings.HasPrefix(line, prefix) {
					suppressed[finding] = true
					continue
				}
				t.Errorf("nag: %s", line)
			}
			var want []string
			if name == "routes" {
				want = []string{nagResource(usModels), nagResource(globalModels)}
			}
			if got := sortedKeys(suppressed); !equalSets(got, want) {
				t.Errorf("suppressed findings %v, want %v", got, want)
			}
			if got := sortedKeys(rotation); !equalSets(got, []string{"WebhookSecret", "WebhookSecretSeed"}) {
				t.Errorf("SMG4 suppressed on %v, want the webhook secret and its seed", got)
			}
			if got := sortedKeys(parking); !equalSets(got, sortedKeys(parkingLines)) {
				t.Errorf("parking suppressions found on %v, want S1 on the bucket and IAM5 on parked/* on %v", got, sortedKeys(parkingLines))
			}
		})
	}
}

// The suppressions: SMG4 (no automatic rotation) on the webhook signing
// secret and its seed, S1 (no server access logs) on the parking bucket
// and IAM5 on the worker's and the reconciler's roles for exactly the
// bucket's parked/* keys, in every stack; and with routes IAM5 on the
// worker's role, for exactly the inference profiles' foundation models
// (Region wildcard, model named), with its reason. Nothing else in any
// stack is suppressed.
func TestNagSuppressionsArePinned(t *testing.T) {
	suppressions := func(s *synthesized) map[string][]map[string]any {
		out := map[string][]map[string]any{}
		for id, r := range s.json["Resources"].(map[string]any) {
			meta, _ := r.(map[string]any)["Metadata"].(map[string]any)
			nag, _ := meta["cdk_nag"].(map[string]any)
			rules, _ := nag["rules_to_suppress"].([]any)
			for _, rule := range rules {
				out[id] = append(out[id], rule.(map[string]any))
			}
		}
		return out
	}
	// rotation checks the secrets' suppressions and removes them.
	rotation := func(s *synthesized, got map[string][]map[string]any) {
		t.Helper()
		for _, name := range []string{s.cfg.Settings.WebhookSecretName(), s.cfg.Settings.WebhookSecretName() + "-seed"} {
			id, _ := s.one(t, "AWS::SecretsManager::Secret", named("Name", name))
			if r := got[id]; len(r) != 1 || r[0]["id"] != "AwsSolutions-SMG4" || r[0]["reason"] != webhookRotationReason || r[0]["applies_to"] != nil {
				t.Errorf("secret %s suppresses %v, want exactly SMG4 for %q", name, r, webhookRotationReason)
			}
			delete(got, id)
		}
	}
	// parking checks the parking bucket's suppressions and removes them:
	// S1 (no access logs) on the bucket, and IAM5 on the worker's and the
	// reconciler's roles for the bucket's parked/* and nothing else.
	parking := func(s *synthesized, got map[string][]map[string]any) {
		t.Helper()
		bucket, _ := s.one(t, "AWS::S3::Bucket", nil)
		if r := got[bucket]; len(r) != 1 || r[0]["id"] != "AwsSolutions-S1" || r[0]["reason"] != parkAccessLogsReason || r[0]["applies_to"] != nil {
			t.Errorf("parking bucket suppresses %v, want exactly S1 for %q", r, parkAccessLogsReason)
		}
		delete(got, bucket)
		for _, fn := range []string{"worker", "reconciler"} {
			role, _ := roleOf(t, s, fn)
			var rest []map[string]any
			found := 0
			for _, r := range got[role] {
				if r["reason"] == parkedWildcardReason {
					found++
					if r["id"] != "AwsSolutions-IAM5" || !equalSets(strs(r["applies_to"]), []string{parkedNagResource(bucket)}) {
						t.Errorf("%s: parking suppression %v, want IAM5 applying to exactly %s", fn, r, parkedNagResource(bucket))
					}
					continue
				}
				rest = append(rest, r)
			}
			if found != 1 {
				t.Errorf("%s: %d parking suppressions in %v, want one", fn, found, got[role])
			}
			if got[role] = rest; len(rest) == 0 {
				delete(got, role)
			}
		}
	}
	got := suppressions(defaults(t))
	rotation(defaults(t), got)
	parking(defaults(t), got)
	if len(got) != 0 {
		t.Errorf("the default stack suppresses %v", got)
	}
	s := routed(t)
	workerRole, _ := roleOf(t, s, "worker")
	got = suppressions(s)
	rotation(s, got)
	parking(s, got)
	if len(got) != 1 || len(got[workerRole]) != 1 {
		t.Fatalf("suppressions %v, want one, on the worker's role %s", got, workerRole)
	}
	rule := got[workerRole][0]
	want := []string{nagResource(usModels), nagResource(globalModels)}
	if rule["id"] != "AwsSolutions-IAM5" || !equalSets(strs(rule["applies_to"]), want) {
		t.Errorf("suppression %v, want AwsSolutions-IAM5 applying to exactly %v", rule, want)
	}
	if r, _ := rule["reason"].(string); !strings.Contains(r, "us.anthropic.claude-sonnet-4-5-20250929-v1:0") ||
		!strings.Contains(r, "bedrock:InferenceProfileArn") || !strings.Contains(r, inferenceProfileWildcard) {
		t.Errorf("reason %q", r)
	}
	for _, w := range want {
		if !strings.HasPrefix(w, "Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/anthropic.") {
			t.Errorf("suppressed %s: only a Region wildcard on a named model may be", w)
		}
	}
}
