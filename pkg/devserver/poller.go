package devserver

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// WorkerHandler is the worker Lambda's handler.
type WorkerHandler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Source is the queue the poller reads, as the event source mapping does.
type Source interface {
	Receive(ctx context.Context, max int, wait time.Duration) ([]events.SQSMessage, error)
	Delete(ctx context.Context, receiptHandles []string) error
}

// Poller emulates Lambda's SQS event source mapping with
// ReportBatchItemFailures: up to Concurrency invocations at once, each with
// up to BatchSize messages gathered for at most BatchWindow, each given
// FunctionTimeout. Messages the handler does not report as failures are
// deleted; reported ones stay and return when their visibility ends. If
// the handler errs, panics, overruns FunctionTimeout, or reports an id that
// is not in the batch, the whole batch stays, as in Lambda.
type Poller struct {
	Source          Source
	Handler         WorkerHandler
	BatchSize       int
	BatchWindow     time.Duration
	Concurrency     int
	FunctionTimeout time.Duration
	QueueARN        string
	Region          string
	Logger          *slog.Logger
	// MemoryMB is the function's configured memory, which Usage bills.
	MemoryMB int
	inflight sync.WaitGroup // handlers still running, late ones included
	meter    meter
}

// Usage is what the invocations so far would be billed for by Lambda.
func (p *Poller) Usage() Usage { return p.meter.usage() }

// Run polls until ctx ends. In-flight invocations are cancelled with it
// (the worker records their attempts as timeouts) and awaited, late ones
// included.
func (p *Poller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range max(p.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.loop(ctx)
		}()
	}
	wg.Wait()
	p.inflight.Wait()
}

func (p *Poller) loop(ctx context.Context) {
	for ctx.Err() == nil {
		batch := p.gather(ctx)
		if len(batch) == 0 {
			continue
		}
		p.invoke(ctx, batch)
	}
}

// gather long-polls for a first message, then keeps receiving until the
// batch is full or the batching window has passed.
func (p *Poller) gather(ctx context.Context) []events.SQSMessage {
	batch, err := p.Source.Receive(ctx, p.BatchSize, 2*time.Second)
	if err != nil {
		if ctx.Err() == nil {
			p.Logger.Warn("poller: receive failed", "err", err)
			sleep(ctx, time.Second)
		}
		return nil
	}
	end := time.Now().Add(p.BatchWindow)
	for len(batch) > 0 && len(batch) < p.BatchSize && time.Now().Before(end) && ctx.Err() == nil {
		wait := time.Until(end).Truncate(time.Second)
		more, err := p.Source.Receive(ctx, p.BatchSize-len(batch), wait)
		if err != nil {
			break
		}
		if len(more) == 0 && wait == 0 {
			sleep(ctx, time.Until(end))
			continue
		}
		batch = append(batch, more...)
	}
	return batch
}

func (p *Poller) invoke(ctx context.Context, batch []events.SQSMessage) {
	for i := range batch {
		batch[i].EventSourceARN = p.QueueARN
		batch[i].AWSRegion = p.Region
	}
	resp, ok := p.call(ctx, batch)
	if !ok {
		return
	}
	keep := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		keep[f.ItemIdentifier] = true
	}
	inBatch := 0
	var done []string
	for _, m := range batch {
		if keep[m.MessageId] {
			inBatch++
		} else {
			done = append(done, m.ReceiptHandle)
		}
	}
	if inBatch != len(keep) {
		p.Logger.Error("poller: a batch item failure names no message of the batch; the whole batch stays")
		return
	}
	if len(done) == 0 {
		return
	}
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer dcancel()
	if err := p.Source.Delete(dctx, done); err != nil {
		p.Logger.Warn("poller: deleting processed messages failed; they will be redelivered and absorbed by the claim", "err", err)
	}
}

// call runs one invocation as Lambda does and reports whether it
// succeeded. When it fails (an error, a panic, the function timeout) the
// whole batch stays for redelivery: AWS returns every message of a failed
// or timed-out invocation to the queue, whatever the handler reported
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
func (p *Poller) call(ctx context.Context, batch []events.SQSMessage) (events.SQSEventResponse, bool) {
	in := invocation{function: "worker", failed: "the whole batch returns to the queue", timeout: p.FunctionTimeout,
		inflight: &p.inflight, logger: p.Logger}
	start := time.Now()
	defer func() { p.meter.record(time.Since(start), p.FunctionTimeout, p.MemoryMB) }()
	return invoke(ctx, in, p.Handler, events.SQSEvent{Records: batch}, len(batch))
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
