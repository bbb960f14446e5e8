package awsclient_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/s3"
)

// halfOpen accepts connections and never answers, as a peer behind a
// dropped NAT entry or a stalled endpoint does: the SDK's default HTTP
// client has no response timeout, so only a deadline ends a call there.
func halfOpen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestEveryStoreAndQueueCallHasADeadline(t *testing.T) {
	ep := halfOpen(t)
	cfg, err := awsclient.Load(t.Context(), awsclient.Config{Region: "us-east-1", Endpoint: ep, CallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The test's own context would end the call only after 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	start := time.Now()
	_, err = awsclient.DynamoDB(cfg).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}, UpdateExpression: aws.String("SET a = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: "1"}}})
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Fatalf("UpdateItem on a half-open connection: err %v after %s, want a failure within the 300 ms deadline", err, took)
	}

	start = time.Now()
	_, err = awsclient.SQS(cfg).ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(ep + "/q"),
		ReceiptHandle: aws.String("r"), VisibilityTimeout: 30})
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Fatalf("ChangeMessageVisibility: err %v after %s, want a failure within the deadline", err, took)
	}

	start = time.Now()
	_, err = dynamodbstreams.NewFromConfig(cfg).GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("i")})
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Fatalf("GetRecords: err %v after %s, want a failure within the deadline", err, took)
	}

	// The parking lot's put: a hung one must not hold a paid outcome's
	// whole finish window (pkg/worker hedges puts on this deadline).
	start = time.Now()
	err = s3.New(s3.NewClient(cfg), "b").Put(ctx, "parked/j/w", []byte("{}"))
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Fatalf("S3 PutObject: err %v after %s, want a failure within the deadline", err, took)
	}

	// A long poll gets its wait on top of the deadline, and no more.
	start = time.Now()
	_, err = awsclient.SQS(cfg).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(ep + "/q"), WaitTimeSeconds: 1})
	if took := time.Since(start); err == nil || took < time.Second || took > 3*time.Second {
		t.Fatalf("ReceiveMessage(wait 1 s): err %v after %s, want a failure after 1.3 s", err, took)
	}
}

func TestNoDeadlineUnlessAsked(t *testing.T) {
	ep := halfOpen(t)
	cfg, err := awsclient.Load(t.Context(), awsclient.Config{Region: "us-east-1", Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = awsclient.DynamoDB(cfg).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}})
	// What the deadline is for: without one, only the caller's context
	// ends a call on a half-open connection.
	if took := time.Since(start); err == nil || took < 700*time.Millisecond {
		t.Fatalf("GetItem without a deadline: err %v after %s, want it to hang until the caller's 800 ms", err, took)
	}
}
