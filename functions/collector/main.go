// Command collector is the batch lane's scheduled Lambda: each run
// submits the batches that are due, polls the submitted ones and settles
// their results (docs/lanes.md, "The batch lane"). It only wires its
// role (pkg/app/collectorrole), and links the model providers its batch
// lanes call but not the worker's wiring nor the notifier.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/collectorrole"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "collector:", err)
		os.Exit(1)
	}
}

// run returns only if the wiring fails, which Lambda reports as an Init
// error.
func run() error { return roles.Lambda(collectorrole.Handler) }
