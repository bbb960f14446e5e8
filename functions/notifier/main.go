// Command notifier is the Lambda that delivers job callbacks: fed by the
// jobs table's stream and by the callback queue (docs/webhooks.md). It
// only wires.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app"
)

func main() {
	if err := app.Lambda(app.NotifierRole); err != nil {
		fmt.Fprintln(os.Stderr, "notifier:", err)
		os.Exit(1)
	}
}
