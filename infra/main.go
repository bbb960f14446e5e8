// Command infra is the aijobs CDK app. cdk.json at the repository root runs
// it (`go run -C infra .`); it reads its knobs from the CDK context and the
// deployment's numbers from pkg/settings, the same settings the Lambdas and
// the local dev server use. See docs/deploy.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := LoadConfig(ContextLookup(app.Node()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	NewStack(app, cfg)
	if v, _ := ContextLookup(app.Node())("nag"); v != "false" {
		ApplyNag(app)
	}
	app.Synth(nil)
}
