// Command api is the API Lambda: POST /jobs, GET /jobs, GET /jobs/{id},
// POST /jobs/{id}/cancel behind API Gateway's HTTP API. It only wires, and
// links no model provider nor the notifier (pkg/app/roles).
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := roles.Lambda(roles.APIHandler); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}
