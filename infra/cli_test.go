package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/config"
)

// cliSynth runs `cdk synth` (or cdklocal) through the CLI pinned in the
// root package.json, exactly as `make synth` does, with every network path
// closed: the proxies point at a dead port and the Go module proxy is off,
// so a synth that needed the network (notices, telemetry, a lookup, a
// module download) fails here.
// routes is the AIJOBS_ROUTES the functions must get ("" for none).
func cliSynth(t *testing.T, cli, routes string, extra ...string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "node_modules", ".bin", cli))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("AIJOBS_REQUIRE_CDK_CLI") != "" {
			t.Fatalf("%s missing: run `make cdk-cli`", bin)
		}
		t.Skipf("%s missing: run `make cdk-cli` (make test-infra does)", bin)
	}
	out := t.TempDir()
	args := append([]string{"synth", "--quiet", "-o", out,
		"-c", "apiAssetDir=" + filepath.Join(assetDir, "api"),
		"-c", "workerAssetDir=" + filepath.Join(assetDir, "worker"),
		"-c", "reconcilerAssetDir=" + filepath.Join(assetDir, "reconciler"),
		"-c", "notifierAssetDir=" + filepath.Join(assetDir, "notifier")}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = ".." // where cdk.json is
	cmd.Env = append(os.Environ(),
		"CDK_DISABLE_CLI_TELEMETRY=true",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "no_proxy=",
		"GOPROXY=off", "GOFLAGS=-mod=readonly",
	)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s synth: %v\n%s", cli, err, output.String())
	}
	t.Logf("%s synth took %s", cli, time.Since(start).Round(100*time.Millisecond))
	if s := output.String(); strings.Contains(s, "NOTICES") {
		t.Errorf("%s printed notices (cdk.json should turn them off):\n%s", cli, s)
	}
	b, err := os.ReadFile(filepath.Join(out, "AijobsStack.template.json"))
	if err != nil {
		t.Fatalf("no template: %v\n%s", err, output.String())
	}
	lintLater(t, filepath.Join(out, "AijobsStack.template.json"))
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	functions := 0
	for _, r := range tmpl.Resources {
		if r.Type == "AWS::Lambda::Function" {
			functions++
			env, _ := r.Properties["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if got, _ := vars["AIJOBS_ROUTES"].(string); got != routes {
				t.Errorf("%s: %v has AIJOBS_ROUTES %q, want %q", cli, r.Properties["FunctionName"], got, routes)
			}
		}
	}
	if functions != len(functionNames) {
		t.Errorf("%s: %d functions in the template, want %d", cli, functions, len(functionNames))
	}
}

// With a routes file (and so the worker's model grants and the nag
// suppression of the inference profiles' models), as `make synth
// CDK_ARGS="-c routesFile=..."` runs it.
func TestCDKSynthOffline(t *testing.T) {
	t.Parallel()
	compact, err := config.CompactRoutes(testRoutes)
	if err != nil {
		t.Fatal(err)
	}
	cliSynth(t, "cdk", compact, "-c", "routesFile="+writeFile(t, "routes.json", testRoutes))
}

func TestCDKLocalSynthOffline(t *testing.T) {
	t.Parallel()
	cliSynth(t, "cdklocal", "", "-c", "throwaway=true")
}
