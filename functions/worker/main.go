// Command worker is the worker Lambda: SQS batches of job ids in, batch
// item failures out (ReportBatchItemFailures). It only wires its role
// (pkg/app/workerrole), and links the model providers but not the batch
// lane's collector nor the notifier.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/app/workerrole"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run returns only if the wiring fails, which Lambda reports as an Init
// error.
func run() error { return roles.Lambda(workerrole.Handler) }
