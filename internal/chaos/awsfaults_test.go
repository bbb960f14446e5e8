package chaos

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// forced returns SDK options that give every call of a client the plan p
// (a fresh copy per call) and inject it next to the transport, exactly
// where AWSFaults.Middleware puts it.
func forced(p fault, attempts *atomic.Int32) func(*smithymw.Stack) error {
	f := &AWSFaults{}
	return func(stack *smithymw.Stack) error {
		if err := stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("forcePlan",
			func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
				q := &plan{fault: p}
				return next.HandleInitialize(context.WithValue(ctx, planKey{}, q), in)
			}), smithymw.After); err != nil {
			return err
		}
		if err := stack.Deserialize.Add(smithymw.DeserializeMiddlewareFunc("countAttempts",
			func(ctx context.Context, in smithymw.DeserializeInput, next smithymw.DeserializeHandler) (smithymw.DeserializeOutput, smithymw.Metadata, error) {
				attempts.Add(1)
				return next.HandleDeserialize(ctx, in)
			}), smithymw.After); err != nil {
			return err
		}
		return stack.Deserialize.Add(smithymw.DeserializeMiddlewareFunc("chaosInject", f.inject), smithymw.After)
	}
}

type testAWS struct {
	ddb   *ddb.Client
	sqs   *awssqs.Client
	table string
	queue string
}

func newTestAWS(t *testing.T, p fault, attempts *atomic.Int32) testAWS {
	t.Helper()
	ctx := context.Background()
	plain := awstest.Config(t, nil)
	table := awstest.Prefix(t)
	if _, err := awsclient.DynamoDB(plain).CreateTable(ctx, &ddb.CreateTableInput{
		TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	q, err := awsclient.SQS(plain).CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := awstest.Config(t, nil)
	cfg.APIOptions = append(cfg.APIOptions, forced(p, attempts))
	return testAWS{ddb: awsclient.DynamoDB(cfg), sqs: awsclient.SQS(cfg), table: table, queue: *q.QueueUrl}
}

func (a testAWS) put(ctx context.Context, id string) error {
	_, err := a.ddb.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(a.table),
		Item:                map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}},
		ConditionExpression: aws.String("attribute_not_exists(id)")})
	return err
}

// The injected errors are the services' own: the SDK deserializes them to
// the modeled types and its retryer classifies them as it would real ones
// (throttles and 500s retried, throttles as throttles), per DynamoDB's
// "Error handling" (ProvisionedThroughputExceededException and
// ThrottlingException are HTTP 400, InternalServerError 500) and SQS's
// RequestThrottled / InternalFailure.
func TestInjectedErrorsAreTheServicesOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	throttles := retry.IsErrorThrottles(retry.DefaultThrottles)
	retryables := retry.IsErrorRetryables(retry.DefaultRetryables)
	for _, c := range []struct {
		name     string
		p        fault
		sqs      bool
		check    func(error) bool
		throttle bool
	}{
		{"ddb provisioned throughput", fault{kind: AWSThrottle, code: "ProvisionedThroughputExceededException", burst: 4}, false,
			func(err error) bool {
				var e *ddbtypes.ProvisionedThroughputExceededException
				return errors.As(err, &e)
			}, true},
		{"ddb throttling", fault{kind: AWSThrottle, code: "ThrottlingException", burst: 4}, false,
			func(err error) bool {
				var e smithy.APIError
				return errors.As(err, &e) && e.ErrorCode() == "ThrottlingException"
			}, true},
		{"ddb 500", fault{kind: AWSServerError, code: "InternalServerError", burst: 4}, false,
			func(err error) bool { var e *ddbtypes.InternalServerError; return errors.As(err, &e) }, false},
		{"sqs throttled", fault{kind: AWSThrottle, code: "RequestThrottled", burst: 3}, true,
			func(err error) bool { var e *sqstypes.RequestThrottled; return errors.As(err, &e) }, true},
		{"sqs 500", fault{kind: AWSServerError, code: "InternalFailure", burst: 3}, true,
			func(err error) bool {
				var e smithy.APIError
				return errors.As(err, &e) && e.ErrorCode() == "InternalFailure"
			}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var attempts atomic.Int32
			a := newTestAWS(t, c.p, &attempts)
			var err error
			if c.sqs {
				_, err = a.sqs.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(a.queue), MessageBody: aws.String(`{"job_id":"x"}`)})
			} else {
				err = a.put(ctx, "x")
			}
			if err == nil || !c.check(err) {
				t.Fatalf("error %v (%T) is not the service's own", err, err)
			}
			op := "DynamoDB.PutItem"
			if c.sqs {
				op = "SQS.SendMessage"
			}
			if int(attempts.Load()) != sdkAttempts(op) || c.p.burst != sdkAttempts(op) {
				t.Fatalf("%d attempts, want the SDK's %d (the error must be retried)", attempts.Load(), sdkAttempts(op))
			}
			if retryables.IsErrorRetryable(err) != aws.TrueTernary || (throttles.IsErrorThrottle(err) == aws.TrueTernary) != c.throttle {
				t.Fatalf("the SDK classifies %v as retryable=%v throttle=%v", err, retryables.IsErrorRetryable(err), throttles.IsErrorThrottle(err))
			}
			// A burst shorter than the SDK's attempts is absorbed by its retries.
			attempts.Store(0)
			b := newTestAWS(t, fault{kind: c.p.kind, code: c.p.code, burst: 1}, &attempts)
			if c.sqs {
				_, err = b.sqs.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(b.queue), MessageBody: aws.String(`{"job_id":"x"}`)})
			} else {
				err = b.put(ctx, "x")
			}
			if err != nil || attempts.Load() != 2 {
				t.Fatalf("burst of one: err %v after %d attempts, want success on the second", err, attempts.Load())
			}
		})
	}
}

// A lost answer lands: the SDK's retry of a conditional put then finds the
// item it wrote itself.
func TestLostAnswerLandsAndIsRetried(t *testing.T) {
	t.Parallel()
	var attempts atomic.Int32
	a := newTestAWS(t, fault{kind: AWSLostAnswer, burst: 1}, &attempts)
	err := a.put(context.Background(), "lost")
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || attempts.Load() != 2 {
		t.Fatalf("err %v after %d attempts: want the retry refused by the first attempt's own write", err, attempts.Load())
	}
}

// A hung attempt waits, then times out and is retried; if the caller's
// context ends first, the call ends with it.
func TestHangTimesOutOrEndsWithTheCaller(t *testing.T) {
	t.Parallel()
	var attempts atomic.Int32
	a := newTestAWS(t, fault{kind: AWSHang, burst: 1, delay: 300 * time.Millisecond}, &attempts)
	start := time.Now()
	if err := a.put(context.Background(), "hang"); err != nil || time.Since(start) < 300*time.Millisecond || attempts.Load() != 2 {
		t.Fatalf("err %v after %s and %d attempts: want a success after the hang", err, time.Since(start), attempts.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	b := newTestAWS(t, fault{kind: AWSHang, burst: 1, delay: 5 * time.Second}, &attempts)
	start = time.Now()
	err := b.put(ctx, "hang")
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %s: want the caller's deadline", err, time.Since(start))
	}
}
