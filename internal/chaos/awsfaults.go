package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	smithymw "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/aijobs/aijobs/pkg/job"
)

// The AWS fault kinds.
const (
	// AWSThrottle answers DynamoDB's ProvisionedThroughputExceededException
	// or ThrottlingException, or SQS's RequestThrottled (HTTP 400), for
	// one attempt of a call up to all of the SDK's attempts (sdkAttempts),
	// which then reach the caller.
	AWSThrottle = "aws_throttle"
	// AWSServerError answers HTTP 500 (InternalServerError, InternalFailure)
	// the same way.
	AWSServerError = "aws_500"
	// AWSStall delays the request past the heartbeat, then sends it: a slow
	// network or a queueing service; the call succeeds late.
	AWSStall = "aws_stall"
	// AWSHang never delivers the request (a half-open connection): the
	// attempt ends with a network timeout after a long wait, or when the
	// caller's context ends; the SDK then retries.
	AWSHang = "aws_hang"
	// AWSLostAnswer delivers the request (it lands at kumo) and loses the
	// answer: the caller sees a read timeout and the SDK retries a request
	// that already happened.
	AWSLostAnswer = "aws_lost_answer"
	// AWSRetriesExhausted counts throttles and 500s that outlasted the
	// SDK's retries and reached the caller as an error.
	AWSRetriesExhausted = "aws_retries_exhausted"
)

// sdkAttempts is how many attempts the SDK makes of one call of op, which
// awsclient leaves at the SDK's defaults: DynamoDB's client makes one more
// than the standard retryer's retry.DefaultMaxAttempts (4, with a 25 ms
// base backoff), SQS's the standard three. A fault burst that long reaches
// the caller.
func sdkAttempts(op string) int {
	if strings.HasPrefix(op, "DynamoDB.") {
		return retry.DefaultMaxAttempts + 1
	}
	return retry.DefaultMaxAttempts
}

// AWSRates are the chances, per call (not per attempt), of each fault.
type AWSRates struct {
	Throttle, ServerError, Stall, Hang, LostAnswer float64
}

// AWSFaults injects faults into the real SDK clients through their
// middleware stacks: a plan per call (Initialize step, before the retry
// loop) and the fault itself next to the transport (innermost Deserialize
// step), so the SDK's own deserializers and retryer see exactly what a
// real throttle, 500, timeout or lost answer would give them.
type AWSFaults struct {
	Seed  Seed
	Where string
	Rates AWSRates
	// StallMin..StallMax is how long a stalled request waits; HangMax how
	// long a hung attempt waits for an answer that never comes.
	StallMin, StallMax, HangMax time.Duration
	// Until ends the injection (the run's load phase); zero: never.
	Until    time.Time
	Recorder Recorder

	mu   sync.Mutex
	seen map[string]int
}

type planKey struct{}

// fault is a call's fault: its kind, the error code it answers, how many
// attempts it hits and how long it holds each.
type fault struct {
	kind  string
	code  string
	burst int
	delay time.Duration
}

// plan is a call's fault and the attempts seen so far.
type plan struct {
	fault
	attempts atomic.Int32
}

// Middleware is an aws.Config APIOptions entry.
func (f *AWSFaults) Middleware(stack *smithymw.Stack) error {
	if err := stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("chaosPlan", f.planCall), smithymw.After); err != nil {
		return err
	}
	return stack.Deserialize.Add(smithymw.DeserializeMiddlewareFunc("chaosInject", f.inject), smithymw.After)
}

func (f *AWSFaults) planCall(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
	if !f.Until.IsZero() && !time.Now().Before(f.Until) {
		return next.HandleInitialize(ctx, in)
	}
	op := awsmw.GetServiceID(ctx) + "." + awsmw.GetOperationName(ctx)
	id := jobOf(in.Parameters)
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	n := f.seen[op+"/"+id]
	f.seen[op+"/"+id]++
	f.mu.Unlock()
	p := f.decide(op, id, n)
	if p == nil {
		return next.HandleInitialize(ctx, in)
	}
	f.Recorder.Fault(Event{Kind: p.kind, Where: f.Where, Op: op, Job: id})
	if p.burst >= sdkAttempts(op) {
		f.Recorder.Fault(Event{Kind: AWSRetriesExhausted, Where: f.Where, Op: op, Job: id})
	}
	return next.HandleInitialize(context.WithValue(ctx, planKey{}, p), in)
}

// decide is the fault of the n-th call of op for job id (a pure function
// of the seed), or nil.
func (f *AWSFaults) decide(op, id string, n int) *plan {
	u := f.Seed.Float("aws", f.Where, op, id, n)
	r := f.Rates
	p := &plan{fault: fault{burst: 1}}
	switch {
	case u < r.Throttle:
		p.kind = AWSThrottle
	case u < r.Throttle+r.ServerError:
		p.kind = AWSServerError
	case u < r.Throttle+r.ServerError+r.Stall:
		p.kind, p.delay = AWSStall, f.Seed.Between(f.StallMin, f.StallMax, "stall", f.Where, op, id, n)
	case u < r.Throttle+r.ServerError+r.Stall+r.Hang:
		p.kind, p.delay = AWSHang, f.Seed.Between(f.StallMin, f.HangMax, "hang", f.Where, op, id, n)
	case u < r.Throttle+r.ServerError+r.Stall+r.Hang+r.LostAnswer:
		p.kind = AWSLostAnswer
	default:
		return nil
	}
	if p.kind == AWSThrottle || p.kind == AWSServerError {
		p.burst = 1 + f.Seed.Intn(sdkAttempts(op), "burst", f.Where, op, id, n)
		p.code = errorCode(p.kind, op, f.Seed.Intn(2, "code", f.Where, op, id, n))
	}
	return p
}

func (f *AWSFaults) inject(ctx context.Context, in smithymw.DeserializeInput, next smithymw.DeserializeHandler) (smithymw.DeserializeOutput, smithymw.Metadata, error) {
	p, _ := ctx.Value(planKey{}).(*plan)
	if p == nil || int(p.attempts.Add(1)) > p.burst {
		return next.HandleDeserialize(ctx, in)
	}
	switch p.kind {
	case AWSThrottle, AWSServerError:
		return smithymw.DeserializeOutput{RawResponse: errorResponse(p.kind, p.code)}, smithymw.Metadata{}, nil
	case AWSStall:
		if err := sleep(ctx, p.delay); err != nil {
			return smithymw.DeserializeOutput{}, smithymw.Metadata{}, &smithy.CanceledError{Err: err}
		}
		return next.HandleDeserialize(ctx, in)
	case AWSHang:
		if err := sleep(ctx, p.delay); err != nil {
			return smithymw.DeserializeOutput{}, smithymw.Metadata{}, &smithy.CanceledError{Err: err}
		}
		return smithymw.DeserializeOutput{}, smithymw.Metadata{}, &smithyhttp.RequestSendError{Err: readTimeout()}
	case AWSLostAnswer:
		out, md, err := next.HandleDeserialize(ctx, in)
		if err != nil {
			return out, md, err
		}
		if r, ok := out.RawResponse.(*smithyhttp.Response); ok && r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
		}
		return smithymw.DeserializeOutput{}, md, &smithyhttp.RequestSendError{Err: readTimeout()}
	}
	return next.HandleDeserialize(ctx, in)
}

// readTimeout is what the transport returns when an answer never comes:
// a net.Error whose Timeout() is true, which the SDK retries.
func readTimeout() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
}

// errorCode picks the service's own error code for a fault.
func errorCode(kind, op string, alt int) string {
	sqs := strings.HasPrefix(op, "SQS.")
	switch {
	case kind == AWSThrottle && sqs:
		return "RequestThrottled"
	case kind == AWSThrottle && alt == 0:
		return "ProvisionedThroughputExceededException"
	case kind == AWSThrottle:
		return "ThrottlingException"
	case sqs:
		return "InternalFailure"
	}
	return "InternalServerError"
}

// errorResponse is the service's JSON error answer (DynamoDB's JSON 1.0
// and SQS's JSON protocol, with SQS's query-compatible error header).
func errorResponse(kind, code string) *smithyhttp.Response {
	status, fault := http.StatusBadRequest, "Sender"
	if kind == AWSServerError {
		status, fault = http.StatusInternalServerError, "Receiver"
	}
	typ := "com.amazonaws.dynamodb.v20120810#" + code
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", "chaos-injected")
	if code == "RequestThrottled" || code == "InternalFailure" {
		typ = "com.amazonaws.sqs#" + code
		h.Set("X-Amzn-Query-Error", code+";"+fault)
	}
	body, _ := json.Marshal(map[string]string{"__type": typ, "message": "injected by the chaos harness"})
	return &smithyhttp.Response{Response: &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(strings.NewReader(string(body))), ContentLength: int64(len(body)),
	}}
}

// jobOf is the job an operation's input concerns, when it names one.
func jobOf(params any) string {
	var key map[string]ddbtypes.AttributeValue
	switch in := params.(type) {
	case *ddb.GetItemInput:
		key = in.Key
	case *ddb.UpdateItemInput:
		key = in.Key
	case *ddb.PutItemInput:
		key = in.Item
	case *awssqs.SendMessageInput:
		if in.MessageBody != nil {
			m, _ := job.ParseQueueMessage(*in.MessageBody)
			return m.JobID
		}
	}
	if s, ok := key["id"].(*ddbtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
