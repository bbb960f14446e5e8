package roles

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
)

// Handler builds one function's Lambda handler on the shared wiring: each
// role package's Handler (pkg/app/apirole.Handler, ...).
type Handler func(context.Context, *Base) (any, error)

// Lambda wires a function from its environment and serves the handler
// role builds. It returns only if the wiring fails, which Lambda reports
// as an Init error.
func Lambda(role Handler) error {
	ctx := context.Background()
	b, err := FromEnv(ctx, os.Getenv)
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

// FromEnv is a function's shared wiring from getenv, its environment: the
// settings, and AWS credentials and region as Lambda provides them
// (awsclient.Env), not through the SDK's default chain, which the
// functions do not link.
func FromEnv(ctx context.Context, getenv func(string) string) (*Base, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, Options{LoadAWS: awsclient.Env(getenv)})
}
