package awsclient

import (
	"context"
	"io"
	"reflect"
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
//
// GetObject's body is read after the call returns, on the call's
// context: its deadline then becomes an idle one, d without a byte, and
// ends when the body is closed. Cancelling at return (as this did once)
// failed every read that outran the transport's buffer with "context
// canceled": the collector could not read a Bedrock batch's output on
// moto, and a large parked answer would have failed the same way on S3.
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
				ctx, cancel := context.WithCancel(ctx)
				timer := time.AfterFunc(limit, cancel)
				out, md, err := next.HandleInitialize(ctx, in)
				if body := streamed(ctx, out.Result); err == nil && body.IsValid() {
					body.Set(reflect.ValueOf(&idleBody{ReadCloser: body.Interface().(io.ReadCloser), timer: timer, limit: limit, cancel: cancel}))
					return out, md, nil
				}
				timer.Stop()
				cancel()
				return out, md, err
			}), smithymw.Before)
	}
}

// streamed is GetObject's Body field in result, settable, or the zero
// Value. It is found by reflection so that this package, linked by every
// function, does not link the S3 client into those that use no S3.
func streamed(ctx context.Context, result any) reflect.Value {
	if middleware.GetServiceID(ctx) != "S3" || middleware.GetOperationName(ctx) != "GetObject" {
		return reflect.Value{}
	}
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}
	}
	f := v.Elem().FieldByName("Body")
	if !f.IsValid() || !f.CanSet() || f.Type() != reflect.TypeFor[io.ReadCloser]() || f.IsNil() {
		return reflect.Value{}
	}
	return f
}

// idleBody is a GetObject body whose call deadline restarts with every
// byte read: a stalled body fails after the limit, a long one streams.
type idleBody struct {
	io.ReadCloser
	timer  *time.Timer
	limit  time.Duration
	cancel context.CancelFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.limit)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	b.cancel()
	return b.ReadCloser.Close()
}
