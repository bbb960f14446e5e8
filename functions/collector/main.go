// Command collector is the batch lane's scheduled Lambda: each run
// submits the batches that are due, polls the submitted ones and settles
// their results (docs/architecture.md, "The batch lane"). It only wires,
// and links the model providers (pkg/app/providers builds only those its
// batch lanes call) but not the notifier.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/providers"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := roles.Lambda(providers.CollectorHandler); err != nil {
		fmt.Fprintln(os.Stderr, "collector:", err)
		os.Exit(1)
	}
}
