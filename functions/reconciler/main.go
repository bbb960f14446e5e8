// Command reconciler is the scheduled Lambda that re-sends lost job messages
// through the claim path (docs/architecture.md, "The reconciler"). It only
// wires, and links no model provider nor the notifier (pkg/app/roles; the
// parking lot from pkg/app/lot).
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/lot"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := roles.Lambda(lot.ReconcilerHandler); err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}
