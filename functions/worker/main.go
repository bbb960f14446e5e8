// Command worker is the worker Lambda: SQS batches of job ids in, batch
// item failures out (ReportBatchItemFailures). It only wires; it is the one
// function that links the model providers (pkg/app/providers).
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app/providers"
	"github.com/aijobs/aijobs/pkg/app/roles"
)

func main() {
	if err := roles.Lambda(providers.WorkerHandler); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
