// Command api is the API Lambda: POST /jobs, GET /jobs, GET /jobs/{id},
// POST /jobs/{id}/cancel, GET /webhook-key and POST /webhook-key/rotate
// behind API Gateway's HTTP API. It only wires, and links no model
// provider nor the notifier (pkg/app/roles, pkg/app/signing).
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/app/signing"
)

func main() {
	if err := roles.Lambda(signing.APIHandler); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}
