package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Each Lambda function links only what its role needs (docs/benchmarks.md,
// "Cold start and size"): a package listed here may appear in the
// dependencies of the named functions and of no other. Each function must
// also link its own role's package, so the check cannot pass on an empty
// list.
func TestEachFunctionLinksOnlyItsRole(t *testing.T) {
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	onlyIn := map[string][]string{
		module + "/pkg/model/openai":    {"worker"},
		module + "/pkg/model/anthropic": {"worker"},
		module + "/pkg/model/bedrock":   {"worker"},
		module + "/pkg/model/fake":      {"worker"},
		module + "/pkg/app/providers":   {"worker"},
		sdk + "bedrockruntime":          {"worker"},
		module + "/pkg/notifier":        {"notifier"},
		module + "/pkg/app/callbacks":   {"notifier"},
		sdk + "secretsmanager":          {"worker", "notifier"},
		module + "/pkg/secretsmanager":  {"worker", "notifier"},
		module + "/pkg/dynamodbstreams": nil, // the dev server's stream reader
		sdk + "dynamodbstreams":         nil,
		module + "/pkg/app":             nil, // every role at once
		module + "/pkg/devserver":       nil,
	}
	own := map[string]string{"api": "/pkg/api", "worker": "/pkg/worker", "reconciler": "/pkg/reconciler", "notifier": "/pkg/notifier"}
	for fn, pkg := range own {
		out, err := exec.Command("go", "list", "-deps", "../../functions/"+fn).Output()
		if err != nil {
			t.Fatalf("go list -deps functions/%s: %v", fn, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, module+pkg) {
			t.Errorf("functions/%s does not link its own role's package %s", fn, pkg)
		}
		for p, allowed := range onlyIn {
			if slices.Contains(deps, p) && !slices.Contains(allowed, fn) {
				t.Errorf("functions/%s links %s, which only %v need", fn, p, allowed)
			}
		}
	}
}
