// Command notifier is the Lambda that delivers job callbacks: fed by the
// jobs table's stream and by the callback queue (docs/webhooks.md). It
// only wires (pkg/app/callbacks), and links no model provider.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/callbacks"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := roles.Lambda(callbacks.NotifierHandler); err != nil {
		fmt.Fprintln(os.Stderr, "notifier:", err)
		os.Exit(1)
	}
}
