package wire

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aijobs/aijobs/pkg/config"
)

// Handler builds one function's Lambda handler on the shared wiring.
type Handler func(context.Context, *Base) (any, error)

// Lambda wires a function from its environment and serves the handler
// role builds. It returns only if the wiring fails.
func Lambda(role Handler) error {
	ctx := context.Background()
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	b, err := New(ctx, cfg, Options{})
	if err != nil {
		return err
	}
	h, err := role(ctx, b)
	if err != nil {
		return err
	}
	lambda.Start(h)
	return nil
}

// APIHandler is the API function's role.
func APIHandler(_ context.Context, b *Base) (any, error) { return b.API().Handle, nil }

// ReconcilerHandler is the reconciler function's role.
func ReconcilerHandler(_ context.Context, b *Base) (any, error) { return b.Reconciler().Handle, nil }
