package archtest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Each Lambda function links only what its role needs (docs/benchmarks.md,
// "Cold start and size"): a package listed here may appear in the
// dependencies of the named functions and of no other. Each function must
// also link its own role's package, so the check cannot pass on an empty
// list. The dependencies are those of the shipped build (linux/arm64,
// make lambdas' tags).
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
		sdk + "s3":                      {"worker", "reconciler"}, // the parking lot (pkg/parking)
		module + "/pkg/s3":              {"worker", "reconciler"},
		module + "/pkg/dynamodbstreams": nil, // the dev server's stream reader
		sdk + "dynamodbstreams":         nil,
		module + "/pkg/app":             nil, // every role at once
		module + "/pkg/devserver":       nil,
		// The SDK's default credential chain and what it pulls in: a
		// function's credentials are in its environment (awsclient.Env).
		"github.com/aws/aws-sdk-go-v2/config": nil,
		sdk + "sts":                           nil,
		sdk + "sso":                           nil,
		sdk + "ssooidc":                       nil,
		"github.com/aws/aws-sdk-go-v2/feature/ec2/imds": nil,
		module + "/pkg/awsclient/awsconfig":             nil,
	}
	own := map[string]string{"api": "/pkg/api", "worker": "/pkg/worker", "reconciler": "/pkg/reconciler", "notifier": "/pkg/notifier"}
	for fn, pkg := range own {
		out, err := lambdaDeps(fn)
		if err != nil {
			t.Fatalf("go list -deps functions/%s: %v", fn, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, module+pkg) {
			t.Errorf("functions/%s does not link its own role's package %s", fn, pkg)
		}
		for p, allowed := range onlyIn {
			switch {
			case !slices.Contains(deps, p) || slices.Contains(allowed, fn):
			case allowed == nil:
				t.Errorf("functions/%s links %s, which no function needs", fn, p)
			default:
				t.Errorf("functions/%s links %s, which only %v need", fn, p, allowed)
			}
		}
	}
}

// lambdaDeps lists the packages functions/fn links as make lambdas builds
// it (infra.mk's LAMBDA_BUILD).
func lambdaDeps(fn string) ([]byte, error) {
	cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "../../functions/"+fn)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	return cmd.Output()
}
