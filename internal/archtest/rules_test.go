package archtest

import (
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The layering rules. The package graph in docs/packages.md is
// redrawn by -update-graph, so a picture alone would accept a new upward
// import once refreshed; these rules fail on their own. Each is a function
// over data (the import graph, or a package's linked dependencies)
// answering its violations, so that each is tested twice: on the code it
// finds none, and on the code's data with one planted violation it finds
// exactly that one. A rule that names a package the code no longer has
// says so, so that a rename cannot leave a rule checking nothing.

// violation is one import or link a rule forbids: from (a package, or a
// function) imports or links to.
type violation struct {
	from, to string
	why      string
}

func (v violation) String() string {
	if v.to == "" {
		return v.from + ": " + v.why
	}
	return v.from + " -> " + v.to + ": " + v.why
}

// pairs are the from -> to of vs, what the planted tests compare.
func pairs(vs []violation) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.from+" -> "+v.to)
	}
	return out
}

// leaves are the packages that stand on (almost) nothing of the
// repository: the domain, which every other package uses, and the wire
// shapes, which the client links; each with what of the repository it may
// import.
var leaves = map[string][]string{
	"pkg/job":  nil,
	"pkg/wire": {"pkg/job"},
}

// leafViolations are the leaves' imports of the repository beyond what
// leaves allows them.
func leafViolations(graph map[string][]string) []violation {
	var out []violation
	for _, pkg := range slices.Sorted(maps.Keys(leaves)) {
		tos, ok := graph[pkg]
		if !ok {
			out = append(out, violation{pkg, "", "the rule names a package the code does not have"})
			continue
		}
		why := "a leaf imports nothing of the repository"
		if len(leaves[pkg]) > 0 {
			why += " but " + strings.Join(leaves[pkg], ", ")
		}
		for _, to := range tos {
			if !slices.Contains(leaves[pkg], to) {
				out = append(out, violation{pkg, to, why})
			}
		}
	}
	return out
}

// awsViolations are the AWS and Lambda modules (github.com/aws/...) in
// the linked dependencies of the leaves, every import counted, not only
// the repository's: deps maps a leaf to what go list -deps lists for it.
func awsViolations(deps map[string][]string) []violation {
	var out []violation
	for _, pkg := range slices.Sorted(maps.Keys(deps)) {
		for _, d := range deps[pkg] {
			if strings.HasPrefix(d, "github.com/aws/") {
				out = append(out, violation{pkg, d, "a leaf links no AWS or Lambda module"})
			}
		}
	}
	return out
}

// handlers hold the request and message handling logic: the Lambda
// handlers (the batch lane's collector among them), the operator's replay
// and console, the sync-or-async rule and
// the parking lot's settling. Each declares the small interfaces it needs;
// wiring (pkg/app/..., pkg/devserver, cmd/..., functions/..., internal/...)
// hands it the adapters.
var handlers = []string{"pkg/api", "pkg/worker", "pkg/reconciler", "pkg/notifier", "pkg/collector", "pkg/replay", "pkg/console", "pkg/advise",
	"pkg/parking"}

// adapters wrap an outside service or stand in for one (pkg/memstore,
// pkg/model/fake); a name covers the packages below it (pkg/awsclient's
// awsconfig). pkg/emf wraps CloudWatch's metric format.
var adapters = []string{
	"pkg/dynamodb", "pkg/sqs", "pkg/s3", "pkg/secretsmanager", "pkg/dynamodbstreams", "pkg/awsclient",
	"pkg/model/openai", "pkg/model/anthropic", "pkg/model/bedrock", "pkg/model/fake", "pkg/memstore", "pkg/emf",
}

func isAdapter(pkg string) bool {
	return slices.ContainsFunc(adapters, func(a string) bool { return pkg == a || strings.HasPrefix(pkg, a+"/") })
}

// handlerViolations are the adapters a handler reaches through the
// repository's imports, directly or through packages between (the search
// stops at an adapter, so one adapter using another counts once).
func handlerViolations(graph map[string][]string) []violation {
	var out []violation
	for _, pkg := range append(slices.Clone(handlers), adapters...) {
		if _, ok := graph[pkg]; !ok {
			out = append(out, violation{pkg, "", "the rule names a package the code does not have"})
		}
	}
	for _, h := range handlers {
		via := map[string]string{h: ""} // a package reached -> the one that imported it
		queue := []string{h}
		for len(queue) > 0 {
			from := queue[0]
			queue = queue[1:]
			for _, to := range graph[from] {
				if _, seen := via[to]; seen {
					continue
				}
				via[to] = from
				if !isAdapter(to) {
					queue = append(queue, to)
					continue
				}
				out = append(out, violation{h, to, "a handler reaches an adapter (" + path(via, to) + "): declare the interface it needs and let the wiring pass the adapter"})
			}
		}
	}
	return out
}

// path is the chain of imports that reached pkg, from its handler.
func path(via map[string]string, pkg string) string {
	chain := []string{pkg}
	for p := via[pkg]; p != ""; p = via[p] {
		chain = append([]string{p}, chain...)
	}
	return strings.Join(chain, " -> ")
}

// clientLinks is all of the repository a build with pkg/client may link:
// the client, the wire shapes, the domain and the webhook signatures
// (client.VerifyWebhook).
var clientLinks = []string{"pkg/client", "pkg/wire", "pkg/job", "pkg/webhook"}

// clientViolations are the server code in deps, what go list -deps lists
// for pkg/client: a package of the repository beyond clientLinks, the
// Lambda runtime's module, or an AWS service's client (the SDK's signer,
// for SigV4, is the client's own need).
func clientViolations(deps []string) []violation {
	var out []violation
	for _, d := range deps {
		rel, ours := strings.CutPrefix(d, module+"/")
		switch {
		case ours && !slices.Contains(clientLinks, rel):
			out = append(out, violation{"pkg/client", rel, "the client links no server code"})
		case strings.HasPrefix(d, "github.com/aws/aws-lambda-go"):
			out = append(out, violation{"pkg/client", d, "the client links no Lambda module"})
		case strings.HasPrefix(d, "github.com/aws/aws-sdk-go-v2/service/"):
			out = append(out, violation{"pkg/client", d, "the client links no AWS service client"})
		}
	}
	return out
}

// codeGraph is the repository's import graph (imports).
func codeGraph(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return imports(t, root)
}

// depsOf is what go list -deps lists for a package of the repository.
func depsOf(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// planted is g with one more edge, g itself unchanged.
func planted(g map[string][]string, from, to string) map[string][]string {
	out := maps.Clone(g)
	out[from] = append(slices.Clone(g[from]), to)
	return out
}

// wantOnly fails unless vs is exactly the one violation from -> to.
func wantOnly(t *testing.T, vs []violation, from, to string) {
	t.Helper()
	if got := pairs(vs); !slices.Equal(got, []string{from + " -> " + to}) {
		t.Errorf("planted %s -> %s, the rule found %v", from, to, vs)
	}
}

func TestTheDomainAndTheWireStandAlone(t *testing.T) {
	for _, v := range leafViolations(codeGraph(t)) {
		t.Error(v)
	}
	deps := map[string][]string{}
	for pkg := range leaves {
		deps[pkg] = depsOf(t, pkg)
	}
	for _, v := range awsViolations(deps) {
		t.Error(v)
	}
}

func TestTheLeafRulesFailOnAPlantedImport(t *testing.T) {
	g := codeGraph(t)
	for from, to := range map[string]string{"pkg/job": "pkg/settings", "pkg/wire": "pkg/api"} {
		wantOnly(t, leafViolations(planted(g, from, to)), from, to)
	}
	deps := map[string][]string{}
	for pkg := range leaves {
		deps[pkg] = depsOf(t, pkg)
	}
	for pkg, dep := range map[string]string{"pkg/job": "github.com/aws/aws-sdk-go-v2/aws", "pkg/wire": "github.com/aws/aws-lambda-go/events"} {
		wantOnly(t, awsViolations(planted(deps, pkg, dep)), pkg, dep)
	}
}

func TestHandlersReachNoAdapter(t *testing.T) {
	for _, v := range handlerViolations(codeGraph(t)) {
		t.Error(v)
	}
}

func TestTheHandlerRuleFailsOnAPlantedImport(t *testing.T) {
	g := codeGraph(t)
	wantOnly(t, handlerViolations(planted(g, "pkg/api", "pkg/dynamodb")), "pkg/api", "pkg/dynamodb")
	wantOnly(t, handlerViolations(planted(g, "pkg/worker", "pkg/model/openai")), "pkg/worker", "pkg/model/openai")
	wantOnly(t, handlerViolations(planted(g, "pkg/collector", "pkg/dynamodb")), "pkg/collector", "pkg/dynamodb")
	// Through a package between: the handler is to blame, not the helper.
	between := planted(planted(g, "pkg/advise", "pkg/planted"), "pkg/planted", "pkg/awsclient/awsconfig")
	wantOnly(t, handlerViolations(between), "pkg/advise", "pkg/awsclient/awsconfig")
}

func TestTheClientLinksNoServerCode(t *testing.T) {
	for _, v := range clientViolations(depsOf(t, "pkg/client")) {
		t.Error(v)
	}
}

func TestTheClientRuleFailsOnAPlantedLink(t *testing.T) {
	deps := depsOf(t, "pkg/client")
	for planted, want := range map[string]string{
		module + "/pkg/api":                             "pkg/api",
		"github.com/aws/aws-lambda-go/events":           "github.com/aws/aws-lambda-go/events",
		"github.com/aws/aws-sdk-go-v2/service/dynamodb": "github.com/aws/aws-sdk-go-v2/service/dynamodb",
	} {
		wantOnly(t, clientViolations(append(slices.Clone(deps), planted)), "pkg/client", want)
	}
}
