// Command worker is the worker Lambda: SQS batches of job ids in,
// batch item failures out. It only wires.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		return err
	}
	lambda.Start(a.Worker.Handle)
	return nil
}
