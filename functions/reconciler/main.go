// Command reconciler is the scheduled Lambda that re-sends lost job messages
// through the claim path (docs/architecture.md, "The reconciler"). It only
// wires its role (pkg/app/reconcilerrole), and links no model provider,
// worker, collector nor notifier.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/reconcilerrole"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}

// run returns only if the wiring fails, which Lambda reports as an Init
// error.
func run() error { return roles.Lambda(reconcilerrole.Handler) }
