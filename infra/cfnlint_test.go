package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// cfnLintIgnored are the cfn-lint rules the repository's .cfnlintrc may
// turn off, each for the reason its comment there gives: every other rule
// stays on, and TestCfnLintConfigIsPinned fails when the file ignores
// anything else (or anything without a reason). docs/deploy.md, "Tests",
// lists them.
var cfnLintIgnored = []string{"W3005"}

// cfnLintConfig is the committed configuration, from the repository root.
const cfnLintConfig = "../.cfnlintrc"

// requireCfnLint makes a missing cfn-lint a failure instead of a skip:
// make test-infra sets it, so the lint cannot silently not run there.
const requireCfnLint = "AIJOBS_REQUIRE_CFN_LINT"

// lintTemplates collects every template the tests synthesize (the
// default stack, each variant, the CLI's), one file per distinct content
// and named after the test that built it first, for one cfn-lint run in
// TestMain once the tests are done: one run, because cfn-lint's start
// (loading its resource specifications) costs more than a template.
var lintTemplates struct {
	sync.Mutex
	dir   string
	kept  map[string]string // content hash: file
	files []string
}

// lintLater queues the template at path (a cloud assembly's
// AijobsStack.template.json) for cfn-lint, under test's name, and
// returns the copy it keeps until the run ends ("" if it could not).
func lintLater(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("cfn-lint: read the synthesized template: %v", err)
		return ""
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:])
	l := &lintTemplates
	l.Lock()
	defer l.Unlock()
	if file, ok := l.kept[key]; ok {
		return file
	}
	if l.kept == nil {
		l.kept = map[string]string{}
	}
	name := fmt.Sprintf("%03d-%s.json", len(l.files), regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_"))
	file := filepath.Join(l.dir, name)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Errorf("cfn-lint: keep the template: %v", err)
		return ""
	}
	l.kept[key] = file
	l.files = append(l.files, file)
	return file
}

// cfnLint runs cfn-lint with the configuration at config on templates,
// errors and warnings only (its default rule set: informational rules
// are not included), and returns its findings, one per line. An error is
// cfn-lint failing to run at all.
func cfnLint(config string, templates ...string) ([]string, error) {
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		return nil, errCfnLintMissing
	}
	cfg, err := filepath.Abs(config)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--config-file", cfg, "--format", "parseable", "--non-zero-exit-code", "warning", "--"}, templates...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	var findings []string
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); line != "" {
			findings = append(findings, line)
		}
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return findings, nil
	case errors.As(err, &exit) && len(findings) > 0:
		// exit codes 2 (error) and 4 (warning), with the findings printed
		return findings, nil
	default:
		return nil, fmt.Errorf("cfn-lint %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

var errCfnLintMissing = errors.New("cfn-lint is not installed (pip install cfn-lint; make test-infra requires it)")

// lintCollected is TestMain's last step: cfn-lint on every template the
// tests synthesized. It reports what failed and whether the run fails.
func lintCollected() (failed bool) {
	files := lintTemplates.files
	if len(files) == 0 {
		return false
	}
	findings, err := cfnLint(cfnLintConfig, files...)
	switch {
	case errors.Is(err, errCfnLintMissing) && os.Getenv(requireCfnLint) == "":
		fmt.Fprintf(os.Stderr, "cfn-lint: not run on %d templates: %v\n", len(files), err)
		return false
	case err != nil:
		fmt.Fprintf(os.Stderr, "FAIL cfn-lint: %v\n", err)
		return true
	case len(findings) > 0:
		fmt.Fprintf(os.Stderr, "FAIL cfn-lint: %d findings on the synthesized templates (fix the stack, or suppress a rule in .cfnlintrc "+
			"with a reason and add it to cfnLintIgnored):\n  %s\n", len(findings), strings.Join(findings, "\n  "))
		return true
	}
	fmt.Fprintf(os.Stderr, "cfn-lint: %d templates, no finding\n", len(files))
	return false
}

// needCfnLint skips a test that needs cfn-lint when it is missing, or
// fails it when make test-infra requires it.
func needCfnLint(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		if os.Getenv(requireCfnLint) != "" {
			t.Fatal(errCfnLintMissing)
		}
		t.Skip(errCfnLintMissing)
	}
}

// The committed configuration turns off exactly the pinned rules, each
// under a comment that says why, and nothing else: no other key (include
// or configure rules, regions, templates) that could change what runs.
// The templates carry no cfn-lint metadata, which would turn rules off
// for one template or resource without the configuration saying so.
func TestCfnLintConfigIsPinned(t *testing.T) {
	f, err := os.Open(cfnLintConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ignored []string
	reason, inList := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			reason = false
		case strings.HasPrefix(line, "#"):
			reason = len(strings.TrimSpace(strings.TrimLeft(line, "#"))) > 0
		case line == "ignore_checks:":
			inList = true
		case inList && strings.HasPrefix(line, "- "):
			id := strings.TrimSpace(strings.TrimPrefix(line, "- "))
			if !reason {
				t.Errorf("%s:%d: %s is ignored without a reason (a comment just above it)", cfnLintConfig, n, id)
			}
			ignored = append(ignored, id)
			reason = false
		default:
			t.Errorf("%s:%d: %q: only an ignore_checks list of commented rule ids is allowed", cfnLintConfig, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ignored, cfnLintIgnored) {
		t.Errorf("%s ignores %v, want exactly %v (cfnLintIgnored)", cfnLintConfig, ignored, cfnLintIgnored)
	}
	for _, s := range []*synthesized{defaults(t), routed(t)} {
		if m, ok := s.json["Metadata"].(map[string]any); ok && m["cfn-lint"] != nil {
			t.Errorf("the template has cfn-lint metadata: %v", m["cfn-lint"])
		}
		for id, r := range s.json["Resources"].(map[string]any) {
			if m, ok := r.(map[string]any)["Metadata"].(map[string]any); ok && m["cfn-lint"] != nil {
				t.Errorf("%s has cfn-lint metadata: %v", id, m["cfn-lint"])
			}
		}
	}
}

// The lint can fail: a template with a warning the configuration does not
// suppress (W2001, a parameter never used) and an error (E3002, a property
// the resource type does not have) is reported. The default stack passes
// with the configuration, and without it has findings of the ignored
// rules only, each of them: a suppression CDK no longer needs fails here,
// to be removed.
func TestCfnLintReportsFindings(t *testing.T) {
	needCfnLint(t)
	bad := writeFile(t, "bad.json", `{"Parameters": {"Unused": {"Type": "String"}},
 "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"NoSuchProperty": 1}}}}`)
	findings, err := cfnLint(cfnLintConfig, bad)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(findings, "\n")
	for _, rule := range []string{":W2001:", ":E3002:"} {
		if !strings.Contains(joined, rule) {
			t.Errorf("cfn-lint did not report %s on a template made to break it:\n%s", strings.Trim(rule, ":"), joined)
		}
	}
	tmpl := defaults(t).template
	if findings, err = cfnLint(cfnLintConfig, tmpl); err != nil || len(findings) > 0 {
		t.Errorf("the default stack with %s: %v\n%s", cfnLintConfig, err, strings.Join(findings, "\n"))
	}
	if findings, err = cfnLint(writeFile(t, "empty.cfnlintrc", "{}\n"), tmpl); err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, f := range findings {
		if parts := strings.Split(f, ":"); len(parts) > 5 {
			rules[parts[5]] = true
		}
	}
	for _, id := range cfnLintIgnored {
		if !rules[id] {
			t.Errorf("%s ignores %s, which the default stack no longer breaks: remove it", cfnLintConfig, id)
		}
		delete(rules, id)
	}
	if len(rules) > 0 {
		t.Errorf("unexpected findings without the configuration:\n%s", strings.Join(findings, "\n"))
	}
}
