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
// with every option switched on, with model routes, with batch lanes (the
// collector) and with Bedrock batch lanes (their bucket and service
// role); the only suppressions there can be are the ones
// TestNagSuppressionsArePinned pins: no automatic rotation of the webhook
// signing secret and its seed, the parking bucket's (no access logs; the
// parked/* keys), the inference profiles' models, and the batch bucket's
// (no access logs; the batches/ keys and the batch jobs; a batch lane's
// profile models).
func TestNoUnsuppressedNagFindings(t *testing.T) {
	for name, synth := range map[string]func(t *testing.T) *synthesized{
		"defaults": func(t *testing.T) *synthesized { return build(t, nil, true) },
		"every option": func(t *testing.T) *synthesized {
			return build(t, map[string]any{"throwaway": "true", "jwtIssuer": "https://issuer.example.com/", "jwtAudience": "aijobs",
				"alarmEmail": "ops@example.com"}, true)
		},
		"routes":              routed,
		"batch lanes":         batched,
		"bedrock batch lanes": bedrockBatched,
	} {
		t.Run(name, func(t *testing.T) {
			s := synth(t)
			checkNoNagAnnotations(t, s)
			want := expectedNagLines(t, s, map[string][]string{
				"routes":              {usModels, globalModels},
				"bedrock batch lanes": {batchProfileModels},
			}[name])
			found := map[string]bool{}
		lines:
			for _, line := range strings.Split(nagReport(t, s), "\n")[1:] {
				if line == "" || strings.Contains(line, `","Compliant","N/A",`) {
					continue
				}
				for start := range want {
					if strings.HasPrefix(line, start) {
						found[start] = true
						continue lines
					}
				}
				t.Errorf("nag: %s", line)
			}
			for start, what := range want {
				if !found[start] {
					t.Errorf("the nag report has no suppressed %s (a line starting %s)", what, start)
				}
			}
		})
	}
}

// checkNoNagAnnotations fails on any error annotation and any
// unsuppressed AwsSolutions warning of s.
func checkNoNagAnnotations(t *testing.T, s *synthesized) {
	t.Helper()
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
}

// nagReport is s's cdk-nag report, checked to be one that ran the rules:
// it lists the rules it applied.
func nagReport(t *testing.T, s *synthesized) string {
	t.Helper()
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
	return report
}

// expectedNagLines are the starts of the report lines of s's suppressed
// findings, and what each is: the secrets' rotation, the parking
// bucket's, the worker's inference profile models (workerModels), and
// with a Bedrock batch lane the batch bucket's. A suppressed finding's
// line names it: "[Resource::...] reason".
func expectedNagLines(t *testing.T, s *synthesized, workerModels []string) map[string]string {
	t.Helper()
	line := func(rule, path, finding, reason string) string {
		if finding != "" {
			reason = "[" + finding + "] " + reason
		}
		return `"` + rule + `","` + s.cfg.StackName + "/" + path + `/Resource","Suppressed","` + reason
	}
	want := map[string]string{
		line("AwsSolutions-SMG4", "WebhookSecret", "", webhookRotationReason):     "SMG4 on the webhook secret",
		line("AwsSolutions-SMG4", "WebhookSecretSeed", "", webhookRotationReason): "SMG4 on the webhook secret's seed",
		line("AwsSolutions-S1", "ParkBucket", "", parkAccessLogsReason):           "S1 on the parking bucket",
	}
	bucket, _ := parkBucket(t, s)
	for _, role := range []string{"WorkerRole", "ReconcilerRole"} {
		want[line("AwsSolutions-IAM5", role, parkedNagResource(bucket), parkedWildcardReason)] = "IAM5 on parked/* on " + role
	}
	for l, what := range payloadNagLines(t, s, line) {
		want[l] = what
	}
	for _, m := range workerModels {
		want[line("AwsSolutions-IAM5", "WorkerRole", nagResource(m), "")] = "IAM5 on the worker's " + m
	}
	for _, f := range batchNagFindings(t, s) {
		want[line("AwsSolutions-IAM5", f.role, f.finding, f.reason)] = "IAM5 on " + f.finding + " on " + f.role
	}
	if len(bedrockBatchProviders(s.cfg)) > 0 {
		want[line("AwsSolutions-S1", "BatchBucket", "", batchAccessLogsReason)] = "S1 on the batch bucket"
	}
	return want
}

// The suppressions: SMG4 (no automatic rotation) on the webhook signing
// secret and its seed, S1 (no server access logs) on the parking bucket
// and IAM5 on the worker's and the reconciler's roles for exactly the
// bucket's parked/* keys, in every stack; with routes on inference
// profiles IAM5 on the worker's role, for exactly the profiles'
// foundation models (Region wildcard, model named), with its reason; and
// with a Bedrock batch lane, the batch bucket's (batchSuppressions).
// Nothing else in any stack is suppressed: the collector's role, with
// batch lanes on other providers, needs nothing suppressed.
func TestNagSuppressionsArePinned(t *testing.T) {
	for name, tc := range map[string]struct {
		s            *synthesized
		workerModels []string
	}{
		"default": {defaults(t), nil}, "batch lanes": {batched(t), nil},
		"routes":              {routed(t), []string{usModels, globalModels}},
		"bedrock batch lanes": {bedrockBatched(t), []string{batchProfileModels}},
	} {
		s := tc.s
		got := nagSuppressions(s)
		checkRotationSuppressions(t, s, got)
		checkParkingSuppressions(t, s, got)
		checkPayloadSuppressions(t, s, got)
		checkBatchSuppressions(t, s, got)
		if tc.workerModels != nil {
			checkWorkerModelSuppression(t, s, got, tc.workerModels)
		}
		if len(got) != 0 {
			t.Errorf("the %s stack suppresses %v", name, got)
		}
	}
}

// nagSuppressions are the cdk-nag suppressions of s, by logical id.
func nagSuppressions(s *synthesized) map[string][]map[string]any {
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

// checkRotationSuppressions checks the secrets' suppressions and removes
// them from got.
func checkRotationSuppressions(t *testing.T, s *synthesized, got map[string][]map[string]any) {
	t.Helper()
	for _, name := range []string{s.cfg.Settings.WebhookSecretName(), s.cfg.Settings.WebhookSecretName() + "-seed"} {
		id, _ := s.one(t, "AWS::SecretsManager::Secret", named("Name", name))
		if r := got[id]; len(r) != 1 || r[0]["id"] != "AwsSolutions-SMG4" || r[0]["reason"] != webhookRotationReason || r[0]["applies_to"] != nil {
			t.Errorf("secret %s suppresses %v, want exactly SMG4 for %q", name, r, webhookRotationReason)
		}
		delete(got, id)
	}
}

// checkParkingSuppressions checks the parking bucket's suppressions and
// removes them from got: S1 (no access logs) on the bucket, and IAM5 on
// the worker's and the reconciler's roles for the bucket's parked/* and
// nothing else.
func checkParkingSuppressions(t *testing.T, s *synthesized, got map[string][]map[string]any) {
	t.Helper()
	bucket, _ := parkBucket(t, s)
	if r := got[bucket]; len(r) != 1 || r[0]["id"] != "AwsSolutions-S1" || r[0]["reason"] != parkAccessLogsReason || r[0]["applies_to"] != nil {
		t.Errorf("parking bucket suppresses %v, want exactly S1 for %q", r, parkAccessLogsReason)
	}
	delete(got, bucket)
	for _, fn := range []string{"worker", "reconciler"} {
		role, _ := roleOf(t, s, fn)
		if n := takeSuppression(got, role, parkedWildcardReason, "AwsSolutions-IAM5", parkedNagResource(bucket)); n != 1 {
			t.Errorf("%s: %d parking suppressions, want one: IAM5 applying to exactly %s", fn, n, parkedNagResource(bucket))
		}
	}
}

// takeSuppression removes from got[id] the suppressions with reason, and
// says how many of them were rule, applying to exactly appliesTo.
func takeSuppression(got map[string][]map[string]any, id, reason, rule string, appliesTo ...string) int {
	var rest []map[string]any
	n := 0
	for _, r := range got[id] {
		if r["reason"] != reason {
			rest = append(rest, r)
			continue
		}
		if r["id"] == rule && equalSets(strs(r["applies_to"]), appliesTo) {
			n++
		} else {
			n = -100 // one of another rule or resources: never right
		}
	}
	if got[id] = rest; len(rest) == 0 {
		delete(got, id)
	}
	return n
}

// checkWorkerModelSuppression checks the worker's one suppression beside
// the parking one, IAM5 for exactly the inference profiles' models in
// every Region, and removes it from got.
func checkWorkerModelSuppression(t *testing.T, s *synthesized, got map[string][]map[string]any, models []string) {
	t.Helper()
	workerRole, _ := roleOf(t, s, "worker")
	if len(got[workerRole]) != 1 {
		t.Fatalf("worker suppressions %v, want one beside the parking one", got[workerRole])
	}
	rule := got[workerRole][0]
	var want []string
	for _, m := range models {
		want = append(want, nagResource(m))
	}
	if rule["id"] != "AwsSolutions-IAM5" || !equalSets(strs(rule["applies_to"]), want) {
		t.Errorf("suppression %v, want AwsSolutions-IAM5 applying to exactly %v", rule, want)
	}
	r, _ := rule["reason"].(string)
	if !strings.Contains(r, "bedrock:InferenceProfileArn") || !strings.Contains(r, inferenceProfileWildcard) {
		t.Errorf("reason %q", r)
	}
	for _, m := range models {
		if base := m[strings.LastIndex(m, "/")+1:]; !strings.Contains(r, base) { // the profile's id names it
			t.Errorf("reason %q does not name the profile of %s", r, base)
		}
	}
	for _, w := range want {
		if !strings.HasPrefix(w, "Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/anthropic.") {
			t.Errorf("suppressed %s: only a Region wildcard on a named model may be", w)
		}
	}
	delete(got, workerRole)
}
