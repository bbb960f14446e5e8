package quota_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

// TestAQueueAtItsInFlightCapGivesNoMore: with the cap at 3 and 5
// messages sent, a receive asking for 10 through the front gets 3; then a
// short poll is refused with OverLimit (the SDK's own error type) and a
// long poll waits out its time and gets nothing, no error; once one is
// deleted, a receive gets one more. The emulator alone hands out all 5.
func TestAQueueAtItsInFlightCapGivesNoMore(t *testing.T) {
	ctx := t.Context()
	cfg := awstest.Config(t, nil)
	f, err := quota.Start(awstest.Endpoint(t), quota.Limits{InFlight: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	through := transportOnly(cfg)
	through.BaseEndpoint = aws.String(f.Endpoint)
	bare, via := awsclient.SQS(cfg), awsclient.SQS(through)
	queue := func(name string) *string {
		out, err := bare.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(awstest.Prefix(t) + name)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if _, err := bare.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		return out.QueueUrl
	}
	receive := func(db *sqs.Client, q *string, wait int32) ([]types.Message, error) {
		out, err := db.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: wait})
		if err != nil {
			return nil, err
		}
		return out.Messages, nil
	}
	if got, err := receive(bare, queue("-bare"), 0); err != nil || len(got) != 5 {
		t.Fatalf("the emulator alone handed out %d of 5 (%v), want all: the gap docs/testing.md names has closed", len(got), err)
	}
	q := queue("-capped")
	got, err := receive(via, q, 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("a receive of 10 under a cap of 3 got %d messages (%v), want 3", len(got), err)
	}
	var over *types.OverLimit
	if _, err := receive(via, q, 0); !errors.As(err, &over) {
		t.Fatalf("a short poll at the cap: got %v, want OverLimit", err)
	}
	start := time.Now()
	if more, err := receive(via, q, 1); err != nil || len(more) != 0 || time.Since(start) < time.Second {
		t.Fatalf("a long poll at the cap got %d messages and %v after %v, want none and no error after its 1 s", len(more), err, time.Since(start))
	}
	if _, err := bare.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: got[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if more, err := receive(via, q, 0); err != nil || len(more) != 1 {
		t.Fatalf("a receive with room for one got %d messages (%v), want 1", len(more), err)
	}
}
