// Command api is the API Lambda: POST /jobs, GET /jobs, GET /jobs/{id},
// POST /jobs/{id}/cancel, GET /webhook-key and POST /webhook-key/rotate
// behind API Gateway's HTTP API. It only wires its role (pkg/app/apirole),
// and links no model provider, worker, collector nor notifier.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/apirole"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// run returns only if the wiring fails, which Lambda reports as an Init
// error.
func run() error { return roles.Lambda(apirole.Handler) }
