package archtest

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// Every package of the repository is in one class, so that a rule over a
// class cannot miss a package nobody classified (a new handler left out
// of handlers could import an adapter unseen). The classes with rules of
// their own are leaves, handlers and adapters (rules_test.go); these are
// the rest.

// libraries are shared code below the handlers: the settings, the
// configuration, the model interface, the webhook signatures, the client,
// the finishing writes every finisher builds.
// A handler may import them; one that reached an adapter would make each
// handler importing it reach one too (handlerViolations looks through).
var libraries = []string{"pkg/config", "pkg/settings", "pkg/model", "pkg/webhook", "pkg/client", "pkg/finish"}

// wiring hands adapters to handlers: the role packages, the dev server,
// the commands, the Lambda functions and the CDK stack.
var wiring = []string{
	"pkg/app", "pkg/app/roles", "pkg/app/apirole", "pkg/app/workerrole", "pkg/app/reconcilerrole", "pkg/app/notifierrole",
	"pkg/app/collectorrole", "pkg/app/providers", "pkg/app/lot", "pkg/app/payloads", "pkg/devserver",
	"cmd/aijobs", "cmd/aijobs-apidoc", "cmd/aijobs-bench", "cmd/aijobs-chaos", "cmd/aijobs-dev",
	"functions/api", "functions/worker", "functions/reconciler", "functions/notifier", "functions/collector",
	"infra",
}

// support is the tests' and tools' support: emulator launchers, stand-in
// providers, the benchmark, the chaos harness. (The end-to-end tests,
// e2e, are test files only, which the graph leaves out.)
var support = []string{
	"internal/apispec", "internal/awstest", "internal/bench", "internal/chaos", "internal/kumo", "internal/modelfuzz",
	"internal/moto", "internal/quota", "pkg/storetest", "pkg/model/modeltest", "pkg/client/clienttest",
	"pkg/model/openai/openaitest", "pkg/model/anthropic/anthropictest", "pkg/model/bedrock/bedrocktest", "pkg/model/batchtest",
}

func isLeaf(pkg string) bool { _, ok := leaves[pkg]; return ok }

// classOf names the class of pkg, or "" for none.
func classOf(pkg string) string {
	switch {
	case isLeaf(pkg):
		return "leaves"
	case slices.Contains(handlers, pkg):
		return "handlers"
	case isAdapter(pkg) && !slices.Contains(support, pkg):
		return "adapters"
	case slices.Contains(libraries, pkg):
		return "libraries"
	case slices.Contains(wiring, pkg):
		return "wiring"
	case slices.Contains(support, pkg):
		return "support"
	}
	return ""
}

// classViolations are the packages of graph in no class, and the packages
// a class names that graph does not have (a rename would leave the class
// naming nothing).
func classViolations(graph map[string][]string) []violation {
	var out []violation
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		if classOf(pkg) == "" {
			out = append(out, violation{pkg, "", "a package in no class: add it to one in internal/archtest " +
				"(leaves or handlers or adapters in rules_test.go; libraries, wiring or support in classes_test.go), " +
				"so the layering rules know what it is"})
		}
	}
	named := slices.Concat(slices.Collect(maps.Keys(leaves)), handlers, adapters, libraries, wiring, support)
	for _, pkg := range named {
		if _, ok := graph[pkg]; !ok {
			out = append(out, violation{pkg, "", "a class names a package the code does not have"})
		}
	}
	return out
}

func TestEveryPackageIsClassified(t *testing.T) {
	for _, v := range classViolations(codeGraph(t)) {
		t.Error(v)
	}
}

// Each planted package is found, on top of what the rule finds in the
// code as it is, with a message that says where to classify it.
func TestTheClassRuleFailsOnAPlantedPackage(t *testing.T) {
	g := codeGraph(t)
	found := classViolations(g)
	for _, pkg := range []string{"pkg/planted", "internal/planted", "cmd/planted", "functions/planted", "pkg/app/plantedrole"} {
		after := classViolations(planted(g, pkg, "pkg/job"))
		wantAdded(t, found, after, pkg, "")
		if i := slices.IndexFunc(after, func(v violation) bool { return v.from == pkg }); i < 0 || !strings.Contains(after[i].why, "classes_test.go") {
			t.Errorf("planted package %s: no message says where to classify it", pkg)
		}
	}
	without := maps.Clone(g)
	delete(without, "pkg/collector")
	wantAdded(t, found, classViolations(without), "pkg/collector", "")
}
