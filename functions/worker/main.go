// Command worker is the worker Lambda: SQS batches of job ids in, batch
// item failures out (ReportBatchItemFailures). It only wires.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app"
)

func main() {
	if err := app.Lambda(app.WorkerRole); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
