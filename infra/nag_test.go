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

// Every AwsSolutions rule passes or is suppressed with a reason, in the
// default stack and in the variant with every option switched on.
func TestNoUnsuppressedNagFindings(t *testing.T) {
	for name, overrides := range map[string]map[string]any{
		"defaults": nil,
		"every option": {"throwaway": "true", "jwtIssuer": "https://issuer.example.com/", "jwtAudience": "aijobs",
			"alarmEmail": "ops@example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			s := build(t, overrides, true)
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
			// and none is non-compliant or suppressed.
			reports, _ := filepath.Glob(filepath.Join(s.outdir, "AwsSolutions-*NagReport.csv"))
			if len(reports) != 1 {
				t.Fatalf("nag reports %v", reports)
			}
			b, err := os.ReadFile(reports[0])
			if err != nil {
				t.Fatal(err)
			}
			report := string(b)
			for _, rule := range []string{"AwsSolutions-IAM4", "AwsSolutions-IAM5", "AwsSolutions-APIG4", "AwsSolutions-SQS3", "AwsSolutions-DDB3"} {
				if !strings.Contains(report, `"`+rule+`"`) {
					t.Errorf("the nag report does not mention %s", rule)
				}
			}
			for _, line := range strings.Split(report, "\n")[1:] {
				if line != "" && !strings.Contains(line, `","Compliant","N/A",`) {
					t.Errorf("nag: %s", line)
				}
			}
		})
	}
}
