// Command worker is the worker Lambda: SQS batches of job ids in, batch
// item failures out (ReportBatchItemFailures). It only wires.
package main

import (
	"fmt"
	"os"

	"github.com/aijobs/aijobs/pkg/app"
)

func main() {
	if err := app.Lambda(func(a *app.App) any { return a.Worker.Handle }); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
