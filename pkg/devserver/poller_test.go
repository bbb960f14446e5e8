package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

type source struct {
	mu      sync.Mutex
	batches [][]events.SQSMessage
	deleted []string
}

func (s *source) Receive(ctx context.Context, max int, wait time.Duration) ([]events.SQSMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batches) == 0 {
		return nil, nil
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b, nil
}

func (s *source) Delete(_ context.Context, handles []string) error {
	s.mu.Lock()
	s.deleted = append(s.deleted, handles...)
	s.mu.Unlock()
	return nil
}

func batch(n int) []events.SQSMessage {
	var b []events.SQSMessage
	for i := range n {
		b = append(b, events.SQSMessage{MessageId: fmt.Sprint("m", i), ReceiptHandle: fmt.Sprint("r", i), Body: "{}"})
	}
	return b
}

// TestPollerDeletesLikeLambda: what the handler does not report as failed
// is deleted; a report naming no message of the batch, or an error, keeps
// the whole batch (Lambda's ReportBatchItemFailures rules).
func TestPollerDeletesLikeLambda(t *testing.T) {
	for name, c := range map[string]struct {
		resp    events.SQSEventResponse
		err     error
		deleted []string
	}{
		"all done":        {deleted: []string{"r0", "r1", "r2"}},
		"one failure":     {resp: events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "m1"}}}, deleted: []string{"r0", "r2"}},
		"unknown failure": {resp: events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "zzz"}}}},
		"handler error":   {err: errors.New("boom")},
	} {
		t.Run(name, func(t *testing.T) {
			src := &source{batches: [][]events.SQSMessage{batch(3)}}
			var got events.SQSEvent
			var deadline time.Time
			p := &Poller{Source: src, BatchSize: 10, Concurrency: 1, FunctionTimeout: 3 * time.Second, QueueARN: "arn:q", Region: "r",
				Logger: slog.New(slog.DiscardHandler),
				Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					got = ev
					deadline, _ = ctx.Deadline()
					return c.resp, c.err
				}}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			p.Run(ctx)
			if len(got.Records) != 3 || got.Records[0].EventSourceARN != "arn:q" || got.Records[0].AWSRegion != "r" {
				t.Fatalf("event: %+v", got)
			}
			if d := deadline.Sub(start); d < 2*time.Second || d > 4*time.Second {
				t.Fatalf("invocation deadline %s after start, want the function timeout", d)
			}
			if !slices.Equal(src.deleted, c.deleted) {
				t.Fatalf("deleted %v, want %v", src.deleted, c.deleted)
			}
		})
	}
}

// TestPollerMetersInvocationsAsLambdaBills: each invocation's duration,
// rounded up to the millisecond, times the memory; an invocation that
// overruns its timeout is billed the timeout (Lambda stops it there).
func TestPollerMetersInvocationsAsLambdaBills(t *testing.T) {
	src := &source{batches: [][]events.SQSMessage{batch(2), batch(1)}}
	var n int
	p := &Poller{Source: src, BatchSize: 10, Concurrency: 1, FunctionTimeout: 300 * time.Millisecond, MemoryMB: 2048,
		Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			n++
			if n == 1 {
				time.Sleep(100 * time.Millisecond)
			} else {
				<-ctx.Done() // overruns the timeout
			}
			return events.SQSEventResponse{}, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(800*time.Millisecond, cancel)
	p.Run(ctx)
	u := p.Usage()
	if u.Invocations != 2 {
		t.Fatalf("%d invocations metered, want 2", u.Invocations)
	}
	if u.Billed%time.Millisecond != 0 || u.Billed < 400*time.Millisecond || u.Billed > 550*time.Millisecond {
		t.Fatalf("billed %s, want 100 ms + the 300 ms timeout, in whole milliseconds", u.Billed)
	}
	if want := u.Billed.Seconds() * 2; u.GBSeconds < want-1e-9 || u.GBSeconds > want+1e-9 {
		t.Fatalf("%.6f GB-s, want %.6f (billed x 2 GB)", u.GBSeconds, want)
	}
}
