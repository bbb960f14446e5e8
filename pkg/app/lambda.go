package app

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aijobs/aijobs/pkg/config"
)

// Lambda wires the app from the function's environment and serves the
// handler pick returns (a.API.Handle, a.Worker.Handle). It returns only if
// the wiring fails.
func Lambda(pick func(*App) any) error {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	a, err := New(context.Background(), cfg, Options{})
	if err != nil {
		return err
	}
	lambda.Start(pick(a))
	return nil
}
