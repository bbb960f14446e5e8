package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// cdk.json must run the app offline and carry the feature flags this
// library version recommends (what `cdk init` writes), read from the
// library itself so an upgrade that adds flags fails here until cdk.json
// gets them.
func TestCDKJSON(t *testing.T) {
	b, err := os.ReadFile("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		App      string         `json:"app"`
		Notices  *bool          `json:"notices"`
		Context  map[string]any `json:"context"`
		Versions *bool          `json:"versionReporting"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.App != "go run -C infra ." || f.Notices == nil || *f.Notices || f.Context["cli-telemetry"] != false {
		t.Errorf("cdk.json: app %q, notices %v, cli-telemetry %v", f.App, f.Notices, f.Context["cli-telemetry"])
	}
	want := recommendedFlags(t)
	if len(want) < 50 {
		t.Fatalf("only %d recommended flags found in the library", len(want))
	}
	for k, v := range want {
		if got, ok := f.Context[k]; !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("cdk.json context %s = %v, the library recommends %v", k, got, v)
		}
	}
}

// recommendedFlags reads recommended-feature-flags.json from the jsii
// bundle of aws-cdk-lib inside the Go module.
func recommendedFlags(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-cdk-go/awscdk/v2").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	bundles, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "jsii", "aws-cdk-lib-*.tgz"))
	if len(bundles) != 1 {
		t.Fatalf("aws-cdk-lib bundle: %v", bundles)
	}
	file, err := os.Open(bundles[0])
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	gz, err := gzip.NewReader(file)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatal("no recommended-feature-flags.json in the bundle")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "package/recommended-feature-flags.json" {
			var flags map[string]any
			if err := json.NewDecoder(tr).Decode(&flags); err != nil {
				t.Fatal(err)
			}
			return flags
		}
	}
}
