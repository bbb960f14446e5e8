package chaos

import (
	"context"
	"sync"

	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go"
	smithymw "github.com/aws/smithy-go/middleware"
)

// APIKilled is the kind of the fault that kills the API between its
// PutItem and its SendMessage.
const APIKilled = "api_killed_before_send"

// apiKiller stands in for the API process dying between the PutItem of a
// create and its SendMessage: for a marked job, the SendMessage never
// leaves (no request reaches SQS, no retry), as if the process were gone.
// The API's answer, a 503, never reaches a client that "lost" it.
type apiKiller struct {
	rec Recorder
	mu  sync.Mutex
	ids map[string]bool
}

// mark makes the next SendMessage of job id never happen.
func (k *apiKiller) mark(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil {
		k.ids = map[string]bool{}
	}
	k.ids[id] = true
}

func (k *apiKiller) Middleware(stack *smithymw.Stack) error {
	return stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("chaosAPIKill",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			if awsmw.GetServiceID(ctx) == "SQS" && awsmw.GetOperationName(ctx) == "SendMessage" {
				id := jobOf(in.Parameters)
				k.mu.Lock()
				hit := k.ids[id]
				delete(k.ids, id)
				k.mu.Unlock()
				if hit {
					k.rec.Fault(Event{Kind: APIKilled, Where: "api", Op: "SQS.SendMessage", Job: id})
					return smithymw.InitializeOutput{}, smithymw.Metadata{}, &smithy.CanceledError{Err: context.Canceled}
				}
			}
			return next.HandleInitialize(ctx, in)
		}), smithymw.Before)
}
