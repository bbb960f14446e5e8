package app

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aijobs/aijobs/pkg/config"
)

// Lambda wires the app for role from the function's environment and
// serves that role's handler. It returns only if the wiring fails.
func Lambda(role Role) error {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	a, err := New(context.Background(), cfg, Options{Role: role})
	if err != nil {
		return err
	}
	switch role {
	case APIRole:
		lambda.Start(a.API.Handle)
	case WorkerRole:
		lambda.Start(a.Worker.Handle)
	case ReconcilerRole:
		lambda.Start(a.Reconciler.Handle)
	case NotifierRole:
		if a.Notifier == nil {
			return fmt.Errorf("app: the notifier needs AIJOBS_CALLBACKS=true")
		}
		lambda.Start(a.Notifier.Handle)
	default:
		return fmt.Errorf("app: no Lambda handler for role %d", role)
	}
	return nil
}
