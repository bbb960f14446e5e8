package archtest

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const sdk = "github.com/aws/aws-sdk-go-v2/service/"

// onlyIn says which functions may link a package (docs/benchmarks.md,
// "Cold start and size"): one listed here may appear in the dependencies
// of the named functions and of no other.
var onlyIn = map[string][]string{
	// The two roles that call models: the worker, and the batch lane's
	// collector (which builds only the providers its lanes call).
	module + "/pkg/model/openai":    {"worker", "collector"},
	module + "/pkg/model/anthropic": {"worker", "collector"},
	module + "/pkg/model/bedrock":   {"worker", "collector"},
	module + "/pkg/model/fake":      {"worker", "collector"},
	module + "/pkg/app/providers":   {"worker", "collector"},
	sdk + "bedrockruntime":          {"worker", "collector"},
	// Each role's handler and the package that wires it, in its own
	// function only: the worker does not link the collector (it runs in
	// its own function), and the API links no handler but its own.
	module + "/pkg/api":                {"api"},
	module + "/pkg/app/apirole":        {"api"},
	module + "/pkg/worker":             {"worker"},
	module + "/pkg/app/workerrole":     {"worker"},
	module + "/pkg/reconciler":         {"reconciler"},
	module + "/pkg/app/reconcilerrole": {"reconciler"},
	module + "/pkg/notifier":           {"notifier"},
	module + "/pkg/app/notifierrole":   {"notifier"},
	module + "/pkg/collector":          {"collector"},
	module + "/pkg/app/collectorrole":  {"collector"},
	module + "/pkg/webhook":            {"api", "notifier"}, // the key routes' derivation, the signatures
	sdk + "secretsmanager":             {"worker", "notifier", "api", "collector"},
	module + "/pkg/secretsmanager":     {"worker", "notifier", "api", "collector"},
	module + "/pkg/parking":            {"worker", "reconciler"},
	module + "/pkg/app/lot":            {"worker", "reconciler"},
	// The payload store (docs/payloads.md): the API writes large inputs
	// and signs links, the worker and the collector read inputs, the
	// worker writes answers, the notifier signs a large answer's link.
	module + "/pkg/app/payloads": {"api", "worker", "notifier", "collector"},
	// The parking lot (pkg/parking), the worker's and the reconciler's;
	// a Bedrock batch lane's bucket (pkg/app/providers), the collector's;
	// the payload store (pkg/app/payloads), the API's too.
	sdk + "s3":                      {"worker", "reconciler", "collector", "api"},
	module + "/pkg/s3":              {"worker", "reconciler", "collector", "api"},
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

// own is each function's role package, which it must link, so that the
// check cannot pass on an empty list.
var own = map[string]string{"api": "/pkg/api", "worker": "/pkg/worker", "reconciler": "/pkg/reconciler", "notifier": "/pkg/notifier",
	"collector": "/pkg/collector"}

// roleViolations are the links deps (a function's name -> what it links)
// holds against onlyIn and own.
func roleViolations(deps map[string][]string) []violation {
	var out []violation
	for _, fn := range slices.Sorted(maps.Keys(own)) {
		from := "functions/" + fn
		if !slices.Contains(deps[fn], module+own[fn]) {
			out = append(out, violation{from, module + own[fn], "a function links its own role's package"})
		}
		for _, p := range slices.Sorted(maps.Keys(onlyIn)) {
			allowed := onlyIn[p]
			switch {
			case !slices.Contains(deps[fn], p) || slices.Contains(allowed, fn):
			case allowed == nil:
				out = append(out, violation{from, p, "no function needs it"})
			default:
				out = append(out, violation{from, p, fmt.Sprintf("only %v need it", allowed)})
			}
		}
	}
	return out
}

// Each Lambda function links only what its role needs. The dependencies
// are those of the shipped build (linux/arm64, make lambdas' tags).
func TestEachFunctionLinksOnlyItsRole(t *testing.T) {
	for _, v := range roleViolations(functionDeps(t)) {
		t.Error(v)
	}
}

// Each planted link is found, on top of what the rule finds in the code
// as it is (a real violation fails TestEachFunctionLinksOnlyItsRole, not
// this test).
func TestTheRoleRuleFailsOnAPlantedLink(t *testing.T) {
	deps := functionDeps(t)
	found := roleViolations(deps)
	for fn, p := range map[string]string{
		"worker":     module + "/pkg/collector",
		"api":        module + "/pkg/worker",
		"collector":  module + "/pkg/app/workerrole",
		"notifier":   module + "/pkg/model/openai",
		"reconciler": sdk + "sts",
	} {
		wantAdded(t, found, roleViolations(planted(deps, fn, p)), "functions/"+fn, p)
	}
	without := maps.Clone(deps)
	without["notifier"] = slices.DeleteFunc(slices.Clone(deps["notifier"]), func(p string) bool { return p == module+"/pkg/notifier" })
	wantAdded(t, found, roleViolations(without), "functions/notifier", module+"/pkg/notifier")
}

// wantAdded fails unless after is before and the one violation from -> to.
func wantAdded(t *testing.T, before, after []violation, from, to string) {
	t.Helper()
	added := slices.DeleteFunc(pairs(after), func(p string) bool { return slices.Contains(pairs(before), p) })
	if !slices.Equal(added, []string{from + " -> " + to}) {
		t.Errorf("planted %s -> %s, the rule found %v more than before", from, to, added)
	}
}

// functionDeps is what each function links, listed once per test binary.
func functionDeps(t *testing.T) map[string][]string {
	t.Helper()
	deps, err := listFunctionDeps()
	if err != nil {
		t.Fatal(err)
	}
	return deps
}

var listFunctionDeps = sync.OnceValues(func() (map[string][]string, error) {
	deps := map[string][]string{}
	for fn := range own {
		out, err := lambdaDeps(fn)
		if err != nil {
			return nil, fmt.Errorf("go list -deps functions/%s: %w", fn, err)
		}
		deps[fn] = strings.Fields(string(out))
	}
	return deps, nil
})

// lambdaDeps lists the packages functions/fn links as make lambdas builds
// it (infra.mk's LAMBDA_BUILD).
func lambdaDeps(fn string) ([]byte, error) {
	cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "../../functions/"+fn)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	return cmd.Output()
}
