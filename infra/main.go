// Command infra is the aijobs CDK app. cdk.json at the repository root runs
// it (`go run -C infra .`); it reads its knobs from the CDK context and the
// deployment's numbers from pkg/settings, the same settings the Lambdas and
// the local dev server use. See docs/deploy.md.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	// The CLI passes its output directory relative to where it runs (the
	// repository root), but `go run -C infra` runs the app one level down.
	props := &awscdk.AppProps{}
	if out := os.Getenv("CDK_OUTDIR"); out != "" && !filepath.IsAbs(out) {
		props.Outdir = jsii.String(filepath.Join(repoRoot(), out))
	}
	app := awscdk.NewApp(props)
	ctx := ContextLookup(app.Node())
	cfg, err := LoadConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	NewStack(app, cfg)
	if v, _ := ctx("nag"); v != "false" {
		ApplyNag(app)
	}
	app.Synth(nil)
}
