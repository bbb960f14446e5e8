package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// walkStep finds, in a line of docs/architecture.md's walk, a file and the
// function it names: `pkg/x/y.go` `Type.method` or `pkg/x/y.go` `Func`.
var walkStep = regexp.MustCompile("`([a-z0-9_/]+\\.go)` `(?:([A-Za-z]+)\\.)?([A-Za-z]+)`")

// TestTheWalkNamesFunctionsThatExist: every file and function the walk of
// a job through the code names is there, so a rename that leaves the walk
// behind fails here instead of misleading a newcomer.
func TestTheWalkNamesFunctionsThatExist(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, walk, ok := strings.Cut(string(b), "## A job's walk through the code")
	if !ok {
		t.Fatal(`docs/architecture.md has no "A job's walk through the code"`)
	}
	walk, _, _ = strings.Cut(walk, "\n## ")
	steps := walkStep.FindAllStringSubmatch(walk, -1)
	if len(steps) < 20 {
		t.Fatalf("the walk names %d functions; it should follow a job through at least 20 steps", len(steps))
	}
	for _, s := range steps {
		if missing := walkProblem(s[1], s[2], s[3]); missing != "" {
			t.Errorf("the walk names %s", missing)
		}
	}
}

// walkProblem says what is missing of file's func (recv).name, or "".
func walkProblem(file, recv, name string) string {
	src, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		return file + ", which does not exist"
	}
	decl := `(?m)^func ` + regexp.QuoteMeta(name) + `[\[(]`
	if recv != "" {
		decl = `(?m)^func \(\w+ \*?` + regexp.QuoteMeta(recv) + `\) ` + regexp.QuoteMeta(name) + `\(`
	}
	if !regexp.MustCompile(decl).Match(src) {
		return file + " " + strings.TrimPrefix(recv+"."+name, ".") + ", which that file does not declare"
	}
	return ""
}

// TestTheWalkRuleFailsOnAPlantedRename: a function or file the code does
// not have is reported.
func TestTheWalkRuleFailsOnAPlantedRename(t *testing.T) {
	if p := walkProblem("pkg/worker/claim.go", "Worker", "claim"); p != "" {
		t.Fatalf("a real step is reported: %s", p)
	}
	for _, planted := range [][3]string{
		{"pkg/worker/process.go", "Worker", "process"},
		{"pkg/worker/claim.go", "Worker", "process"},
		{"pkg/worker/claim.go", "attempt", "claim"},
		{"pkg/api/createbody.go", "", "ParseCreated"},
	} {
		if walkProblem(planted[0], planted[1], planted[2]) == "" {
			t.Errorf("planted %v is not reported", planted)
		}
	}
}
