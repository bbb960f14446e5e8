package devserver

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// runPoller runs p over src until every batch was taken and handled (the
// source drained: with one poller goroutine, each batch's invocation and
// deletes came before), then stops it, late handlers included.
func runPoller(t *testing.T, p *Poller, src *source, handled *atomic.Int64, want int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	src.drained = cancel
	stopped := make(chan struct{})
	go func() { p.Run(ctx); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("the poller did not drain its source and stop")
	}
	if handled.Load() != want {
		t.Fatalf("%d invocations, want %d", handled.Load(), want)
	}
}

// TestPollerLateInvocationFailsTheBatch: a Lambda invocation that outlives
// its function timeout is a failed invocation: for an SQS event source
// mapping the whole batch returns to the queue when its visibility ends,
// whatever the handler would have reported
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
// The emulator deletes nothing of it, logs it as an error, and takes the
// next batch without waiting for the late handler.
func TestPollerLateInvocationFailsTheBatch(t *testing.T) {
	logs := &logBuffer{}
	src := &source{batches: [][]events.SQSMessage{batch(3), {{MessageId: "n0", ReceiptHandle: "next", Body: "{}"}}}}
	var handled atomic.Int64
	p := &Poller{Source: src, BatchSize: 10, Concurrency: 1, FunctionTimeout: 200 * time.Millisecond, Logger: logs.logger(),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			defer handled.Add(1)
			if ev.Records[0].MessageId == "m0" {
				<-ctx.Done()                       // the worker sees its deadline...
				time.Sleep(300 * time.Millisecond) // ...and answers late, reporting every message done
			}
			return events.SQSEventResponse{}, nil
		}}
	runPoller(t, p, src, &handled, 2)
	if !slices.Equal(src.deleted, []string{"next"}) {
		t.Fatalf("deleted %v: the late invocation's messages must all stay", src.deleted)
	}
	if !logs.errorLogged("timeout") {
		t.Errorf("the overrun is not logged as an error:\n%s", logs)
	}
}

// TestPollerPanicFailsTheBatch: a panic that escapes the handler kills the
// sandbox in AWS (aws-lambda-go reports it and exits): the invocation
// fails and its whole batch returns. The emulator recovers it at the
// invocation boundary, deletes nothing of the batch, logs it as an error,
// cancels the invocation's context (the nearest it can come to killing the
// sandbox's other goroutines), and keeps polling.
func TestPollerPanicFailsTheBatch(t *testing.T) {
	logs := &logBuffer{}
	src := &source{batches: [][]events.SQSMessage{batch(3), {{MessageId: "n0", ReceiptHandle: "next", Body: "{}"}}}}
	var handled atomic.Int64
	neighbour := make(chan error, 1)
	p := &Poller{Source: src, BatchSize: 10, Concurrency: 1, FunctionTimeout: 2 * time.Second, Logger: logs.logger(),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			defer handled.Add(1)
			if ev.Records[0].MessageId == "m0" {
				go func() { <-ctx.Done(); neighbour <- ctx.Err() }()
				panic("boom outside any per-message recover")
			}
			return events.SQSEventResponse{}, nil
		}}
	runPoller(t, p, src, &handled, 2)
	if !slices.Equal(src.deleted, []string{"next"}) {
		t.Fatalf("deleted %v: the panicked invocation's messages must all stay", src.deleted)
	}
	if !logs.errorLogged("panic", "boom") {
		t.Errorf("the panic is not logged as an error:\n%s", logs)
	}
	select {
	case <-neighbour:
	case <-time.After(30 * time.Second): // the poller has stopped: only a missing cancel keeps it
		t.Error("the invocation's context was not cancelled after the panic")
	}
}
