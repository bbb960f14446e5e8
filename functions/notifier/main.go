// Command notifier is the Lambda that delivers job callbacks: fed by the
// jobs table's stream and by the callback queue (docs/webhooks.md). It
// only wires its role (pkg/app/notifierrole), and links no model provider.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/notifierrole"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "notifier:", err)
		os.Exit(1)
	}
}

// run returns only if the wiring fails, which Lambda reports as an Init
// error.
func run() error { return roles.Lambda(notifierrole.Handler) }
