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
	// drained, when set, is called by each receive that finds no batch
	// left: with one poller goroutine, every batch before has been
	// handled, and its deletes made, by then, so a test stops the poller
	// on it, not on a timer a loaded machine can outrun.
	drained func()
}

func (s *source) Receive(ctx context.Context, max int, wait time.Duration) ([]events.SQSMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batches) == 0 {
		if s.drained != nil {
			s.drained()
		}
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
			src.drained = cancel
			start := time.Now()
			p.Run(ctx)
			ran := time.Since(start)
			if len(got.Records) != 3 || got.Records[0].EventSourceARN != "arn:q" || got.Records[0].AWSRegion != "r" {
				t.Fatalf("event: %+v", got)
			}
			// The invocation began at or after start, and before Run
			// returned: its deadline is the timeout after that.
			if d := deadline.Sub(start); d < 3*time.Second || d > 3*time.Second+ran {
				t.Fatalf("invocation deadline %s after start, want the function timeout of 3s (the run took %s)", d, ran)
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
	var first time.Duration // the first invocation's handler, timed inside it
	p := &Poller{Source: src, BatchSize: 10, Concurrency: 1, FunctionTimeout: 300 * time.Millisecond, MemoryMB: 2048,
		Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			n++
			if n == 1 {
				start := time.Now()
				time.Sleep(100 * time.Millisecond)
				first = time.Since(start)
			} else {
				<-ctx.Done() // overruns the timeout
			}
			return events.SQSEventResponse{}, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	src.drained = cancel
	start := time.Now()
	p.Run(ctx)
	ran := time.Since(start)
	u := p.Usage()
	if u.Invocations != 2 {
		t.Fatalf("%d invocations metered, want 2", u.Invocations)
	}
	// The overrun is billed its 300 ms exactly; the first at least what
	// its handler took (up to the timeout: a loaded machine can stretch
	// its 100 ms past it) and at most what the run did (and its rounding
	// up), however slow the machine.
	if least := min(first, 300*time.Millisecond) + 300*time.Millisecond; u.Billed%time.Millisecond != 0 || u.Billed < least || u.Billed > ran+time.Millisecond {
		t.Fatalf("billed %s, want %s (the first invocation, at most its timeout) + the 300 ms timeout, in whole milliseconds, within the run's %s", u.Billed, first, ran)
	}
	if want := u.Billed.Seconds() * 2; u.GBSeconds < want-1e-9 || u.GBSeconds > want+1e-9 {
		t.Fatalf("%.6f GB-s, want %.6f (billed x 2 GB)", u.GBSeconds, want)
	}
}

// TestMeterBillsAsLambda: a duration is rounded up to the millisecond, an
// overrun billed its timeout, and GB-seconds are the billed time times the
// memory in GB of 1,024 MB.
func TestMeterBillsAsLambda(t *testing.T) {
	var m meter
	m.record(1500*time.Microsecond, time.Second, 1024) // 2 ms
	m.record(3*time.Millisecond, time.Second, 1024)    // 3 ms, already whole
	m.record(1700*time.Millisecond, time.Second, 512)  // an overrun: the 1 s timeout, at half a GB
	u := m.usage()
	if u.Invocations != 3 || u.Billed != 1005*time.Millisecond {
		t.Fatalf("%d invocations billed %s, want 3 billed 1.005s", u.Invocations, u.Billed)
	}
	if want := 0.002 + 0.003 + 0.5; u.GBSeconds < want-1e-9 || u.GBSeconds > want+1e-9 {
		t.Fatalf("%.6f GB-s, want %.6f", u.GBSeconds, want)
	}
}
