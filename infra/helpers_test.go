package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// assetDir holds placeholder api, worker, reconciler, notifier and
// collector bootstrap files, so the tests need no Lambda build.
var assetDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aijobs-infra-assets")
	if err != nil {
		panic(err)
	}
	assetDir = dir
	for _, fn := range append(slices.Clone(functionNames), collectorName) {
		_ = os.MkdirAll(filepath.Join(dir, fn), 0o755)
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\necho placeholder "+fn+"\n"), 0o755); err != nil {
			panic(err)
		}
	}
	if lintTemplates.dir, err = os.MkdirTemp("", "aijobs-infra-cfnlint"); err != nil {
		panic(err)
	}
	code := m.Run()
	jsii.Close()
	if lintCollected() && code == 0 {
		code = 1
	}
	_ = os.RemoveAll(dir)
	_ = os.RemoveAll(lintTemplates.dir)
	os.Exit(code)
}

// functionNames are the functions of every stack, <prefix>-<name>, each
// built from dist/<name>.
var functionNames = []string{"api", "worker", "reconciler", "notifier"}

// collectorName is the function only a stack whose routes offer a batch
// lane has (collector_test.go).
const collectorName = "collector"

// cdkContext is the "context" of the repository's cdk.json: `go test`
// does not read cdk.json, so the tests pass it themselves and synthesize
// with exactly the feature flags `cdk synth` uses.
func cdkContext(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Context
}

// testContext is cdk.json's context, the placeholder assets, then overrides.
func testContext(t *testing.T, overrides map[string]any) map[string]any {
	ctx := cdkContext(t)
	ctx["apiAssetDir"] = filepath.Join(assetDir, "api")
	ctx["workerAssetDir"] = filepath.Join(assetDir, "worker")
	ctx["reconcilerAssetDir"] = filepath.Join(assetDir, "reconciler")
	ctx["notifierAssetDir"] = filepath.Join(assetDir, "notifier")
	ctx["collectorAssetDir"] = filepath.Join(assetDir, collectorName)
	for k, v := range overrides {
		ctx[k] = v
	}
	return ctx
}

// mapLookup is a context Lookup over a plain map, for LoadConfig tests.
func mapLookup(m map[string]any) Lookup {
	return func(key string) (string, bool) {
		v, ok := m[key]
		if !ok {
			return "", false
		}
		s := fmt.Sprint(v)
		return s, s != ""
	}
}

// synthesized is one built stack: its config, its template as JSON, and
// the assertions Template over it. template is the synthesized template
// file, kept for cfn-lint until the run ends (outdir may be gone sooner).
type synthesized struct {
	cfg      Config
	outdir   string
	template string
	app      awscdk.App
	stack    awscdk.Stack
	tmpl     assertions.Template
	json     map[string]any
}

// build synthesizes the stack with the given context overrides. nag adds
// the AwsSolutions checks before synthesis.
func build(t *testing.T, overrides map[string]any, nag bool) *synthesized {
	t.Helper()
	return buildIn(t, t.TempDir(), overrides, nag)
}

// buildIn is build with the cloud assembly (and the nag report) in outdir.
func buildIn(t *testing.T, outdir string, overrides map[string]any, nag bool) *synthesized {
	t.Helper()
	ctx := testContext(t, overrides)
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(outdir)})
	cfg, err := LoadConfig(ContextLookup(app.Node()))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	stack := NewStack(app, cfg)
	if nag {
		ApplyNag(app)
	}
	s := &synthesized{cfg: cfg, outdir: outdir, app: app, stack: stack}
	must(t, "synthesize", func() {
		s.tmpl = assertions.Template_FromStack(stack, nil)
		s.json = *s.tmpl.ToJSON()
	})
	if s.json == nil {
		t.FailNow()
	}
	s.template = lintLater(t, filepath.Join(outdir, "AijobsStack.template.json"))
	return s
}

var (
	defaultOnce  sync.Once
	defaultStack *synthesized
)

// sharedStack is a stack synthesized once, with cdk-nag, for every test
// that only reads it.
type sharedStack struct {
	once sync.Once
	s    *synthesized
}

// get synthesizes the stack the first time, with the context overrides
// returns, given the directory the cloud assembly goes to: one of
// assetDir, not one test's TempDir, since several tests share it
// (TestMain removes assetDir at the end).
func (c *sharedStack) get(t *testing.T, name string, overrides func(dir string) map[string]any) *synthesized {
	t.Helper()
	c.once.Do(func() {
		dir, err := os.MkdirTemp(assetDir, name)
		if err != nil {
			t.Fatal(err)
		}
		c.s = buildIn(t, dir, overrides(dir), true)
	})
	if c.s == nil {
		t.Fatalf("the %s stack did not synthesize", name)
	}
	return c.s
}

// withRoutes is the shared stack whose AIJOBS_ROUTES context is routes.
func (c *sharedStack) withRoutes(t *testing.T, name, routes string) *synthesized {
	t.Helper()
	return c.get(t, name, func(string) map[string]any { return map[string]any{"AIJOBS_ROUTES": routes} })
}

// defaults is the stack as `cdk synth` builds it with no overrides,
// synthesized once for all the tests that only read it.
func defaults(t *testing.T) *synthesized {
	t.Helper()
	defaultOnce.Do(func() { defaultStack = build(t, nil, false) })
	if defaultStack == nil {
		t.Fatal("the default stack did not synthesize")
	}
	return defaultStack
}

// must runs an assertions call: they panic on failure (jsii turns the
// JavaScript exception into a Go panic), which would abort the whole test
// binary; here it fails just this test, with the assertion's message.
func must(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// resources returns the template's resources of one type, by logical id.
func (s *synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// one returns the only resource of a type whose properties match pick.
func (s *synthesized) one(t *testing.T, typ string, pick func(props map[string]any) bool) (string, map[string]any) {
	t.Helper()
	var ids []string
	var found map[string]any
	for id, r := range s.resources(typ) {
		props, _ := r["Properties"].(map[string]any)
		if pick == nil || pick(props) {
			ids = append(ids, id)
			found = props
		}
	}
	if len(ids) != 1 {
		sort.Strings(ids)
		t.Fatalf("want exactly one %s, found %v", typ, ids)
	}
	return ids[0], found
}

// named picks a resource by one string property.
func named(key, value string) func(map[string]any) bool {
	return func(p map[string]any) bool { return p[key] == value }
}

// ref is the logical id a {"Ref": id} or {"Fn::GetAtt": [id, attr]} names.
func ref(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) > 0 {
		s, _ := g[0].(string)
		return s
	}
	return ""
}

// render writes a template value as one string: a literal as itself,
// {"Ref": X} as ${X}, {"Fn::GetAtt": [X, A]} as ${X.A}, Fn::Join joined
// and Fn::Sub as its template, so an ARN built from tokens reads as
// "${Jobs1234.Arn}/index/active".
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if r, ok := x["Ref"].(string); ok {
			return "${" + r + "}"
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return fmt.Sprintf("${%v.%v}", g[0], g[1])
		}
		if sub, ok := x["Fn::Sub"].(string); ok {
			return sub
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			parts, _ := j[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				out[i] = render(p)
			}
			return strings.Join(out, fmt.Sprint(j[0]))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// writeFile writes content to a new file in a test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func num(t *testing.T, v any, what string) float64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s = %#v, want a number", what, v)
	}
	return f
}

func strs(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = []string{x}
	case []any:
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
	}
	sort.Strings(out)
	return out
}

func equalSets(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}
