package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Handle is the Lambda handler: one function serves both event sources,
// told apart by the records' eventSource ("aws:dynamodb" for the table's
// stream, "aws:sqs" for the callback queue), and its schedule (an
// EventBridge event, source "aws.events"), which runs Sweep, so the stack
// deploys one function with one role.
func (n *Notifier) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var peek struct {
		Source  string `json:"source"`
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	if err := json.Unmarshal(raw, &peek); err != nil {
		return nil, fmt.Errorf("notifier: read the event: %w", err)
	}
	if peek.Source == "aws.events" {
		return n.Sweep(ctx)
	}
	if len(peek.Records) == 0 {
		return events.SQSEventResponse{}, nil
	}
	switch src := peek.Records[0].EventSource; src {
	case "aws:dynamodb":
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("notifier: read the stream event: %w", err)
		}
		return n.Stream(ctx, ev)
	case "aws:sqs":
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("notifier: read the queue event: %w", err)
		}
		return n.Deliver(ctx, ev)
	default:
		return nil, fmt.Errorf("notifier: events from %q are not mine", src)
	}
}
