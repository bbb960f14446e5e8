package awsclient

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithymw "github.com/aws/smithy-go/middleware"
)

// deadlined are the services whose every call gets a deadline of its own.
// A model call is not one of them: its rung's timeout bounds it, and a
// stream is read after the call returns.
var deadlined = map[string]bool{"DynamoDB": true, "DynamoDB Streams": true, "SQS": true, "Secrets Manager": true, "S3": true}

// deadline bounds each API call, the SDK's own retries included, by d:
// the SDK clients have no overall timeout, so a request on a half-open
// connection would otherwise wait forever, and with it whatever waits on
// the call (a heartbeat, a finishing write). A long poll's wait
// (ReceiveMessage's WaitTimeSeconds) is added to d.
func deadline(d time.Duration) func(*smithymw.Stack) error {
	return func(stack *smithymw.Stack) error {
		return stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("aijobsCallDeadline",
			func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
				if !deadlined[middleware.GetServiceID(ctx)] {
					return next.HandleInitialize(ctx, in)
				}
				limit := d
				if r, ok := in.Parameters.(*sqs.ReceiveMessageInput); ok {
					limit += time.Duration(r.WaitTimeSeconds) * time.Second
				}
				ctx, cancel := context.WithTimeout(ctx, limit)
				defer cancel()
				return next.HandleInitialize(ctx, in)
			}), smithymw.Before)
	}
}
