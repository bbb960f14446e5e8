package awsclient_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/aijobs/aijobs/internal/awstest"
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

// A GetObject body is read after the call returns. The deadline must
// not end it there (it once did: every read that outran the transport's
// buffer failed with "context canceled"), nor end a body that keeps
// coming; a body that stops coming fails within it.
func TestAGetObjectBodyOutlivesTheCallButNotAStall(t *testing.T) {
	// The deadline is long enough that a loaded machine's pauses between
	// two reads stay under it; the body's whole read, paced below, takes
	// longer than it.
	const limit = 2 * time.Second
	setup, err := awsclient.Load(t.Context(), awsclient.Config{Region: "us-east-1", Endpoint: awstest.Endpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	timed, err := awsclient.Load(t.Context(), awsclient.Config{Region: "us-east-1", Endpoint: awstest.Endpoint(t), CallTimeout: limit})
	if err != nil {
		t.Fatal(err)
	}
	bucket := awstest.Prefix(t)
	if _, err := s3.NewClient(setup).CreateBucket(t.Context(), &s3sdk.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB, past any transport buffer
	if _, err := s3.NewClient(setup).PutObject(t.Context(), &s3sdk.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := s3.NewClient(timed).GetObject(t.Context(), &s3sdk.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(limit / 4) // the caller works between the call and the read
	var got []byte
	buf := make([]byte, 256<<10)
	for { // slower in all than the deadline, never idle as long
		n, err := out.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the body after %d bytes: %v", len(got), err)
		}
		time.Sleep(limit / 8)
	}
	out.Body.Close()
	if !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, want the %d put", len(got), len(body))
	}
	if took := time.Since(start); took < limit {
		t.Fatalf("the read took %s, under the %s deadline: it shows nothing", took, limit)
	}

	// A body that stalls after its headers and a few bytes.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("0123456789"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(stall.Close)
	hung, err := awsclient.Load(t.Context(), awsclient.Config{Region: "us-east-1", Endpoint: stall.URL, CallTimeout: limit})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err = s3.NewClient(hung).GetObject(ctx, &s3sdk.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err = io.ReadAll(out.Body)
	if took := time.Since(start); err == nil || took > 15*time.Second {
		t.Fatalf("a stalled body: err %v after %s, want a failure at the %s deadline, long before the caller's 30 s", err, took, limit)
	}
}
