// Command api is the API Lambda: POST /jobs, GET /jobs, GET /jobs/{id},
// POST /jobs/{id}/cancel behind API Gateway's HTTP API. It only wires.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app"
)

func main() {
	if err := app.Lambda(app.APIRole); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}
