package notifier_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/notifier"
)

// One function serves both event sources: the Lambda events in testdata
// are AWS's documented samples ("Using AWS Lambda with Amazon DynamoDB",
// "Using Lambda with Amazon SQS"), trimmed to one record each.
func TestHandleTellsTheTwoEventSourcesApart(t *testing.T) {
	cb := job.Callback{URL: "https://hooks.example.com/x"}
	f := newFixture(t, func(c *notifier.Config) {
		c.Changes = func(events.DynamoDBEventRecord) (job.Job, job.Job, bool, bool, error) {
			return job.Job{State: job.Running, Callback: cb}, job.Job{ID: "job_x", State: job.Failed, Version: 9, Callback: cb}, true, true, nil
		}
	})
	stream, err := os.ReadFile("testdata/stream-event.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.n.Handle(t.Context(), stream)
	if _, ok := out.(events.DynamoDBEventResponse); err != nil || !ok || len(f.queue.sent) != 1 {
		t.Fatalf("stream event: %T %v, %d notices", out, err, len(f.queue.sent))
	}
	sqs, err := os.ReadFile("testdata/sqs-event.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err = f.n.Handle(t.Context(), sqs)
	if _, ok := out.(events.SQSEventResponse); err != nil || !ok || f.queue.dead[`{"job":`] != "invalid_notice" {
		t.Fatalf("queue event: %T %v, dead %v", out, err, f.queue.dead)
	}
	if _, err := f.n.Handle(t.Context(), json.RawMessage(`{"Records":[{"eventSource":"aws:s3"}]}`)); err == nil || !strings.Contains(err.Error(), "aws:s3") {
		t.Fatalf("an S3 event: %v", err)
	}
}
