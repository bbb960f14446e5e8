// Command reconciler is the scheduled Lambda that re-sends lost job messages
// through the claim path (docs/architecture.md, "The reconciler"). It only
// wires.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app"
)

func main() {
	if err := app.Lambda(app.ReconcilerRole); err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}
