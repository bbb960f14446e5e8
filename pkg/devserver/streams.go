package devserver

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// StreamHandler is the handler of a Lambda function fed by a DynamoDB
// stream (the notifier).
type StreamHandler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// StreamSource is the stream the StreamPoller reads, as the event source
// mapping does.
type StreamSource interface {
	// Shards lists the stream's shards, each mapped to its parent's id
	// ("" for none).
	Shards(ctx context.Context) (map[string]string, error)
	// Iterator is a position in shard: its oldest record when after is
	// "", else just after the record whose sequence number is after.
	Iterator(ctx context.Context, shard, after string) (string, error)
	// Records reads up to max records at iterator and returns the next
	// iterator: "" once the shard is closed and read to its end.
	Records(ctx context.Context, iterator string, max int) ([]events.DynamoDBEventRecord, string, error)
}

// StreamPoller emulates Lambda's event source mapping on a DynamoDB
// stream, with FunctionResponseTypes ReportBatchItemFailures
// (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html and the
// pages it links; docs/decisions.md, "The stream's event source mapping,
// emulated"):
//
//   - each shard is read from its oldest record (StartingPosition
//     TRIM_HORIZON), in order, with one invocation at a time (a
//     ParallelizationFactor of 1); a shard found later gets its own reader
//     at once, a child only once its parent is read to its end;
//   - a batch holds up to BatchSize records gathered for at most
//     BatchWindow after the first (MaximumBatchingWindowInSeconds), and
//     each invocation gets FunctionTimeout;
//   - a batch the handler answers without failures is checkpointed whole;
//     one it answers with batch item failures is checkpointed just before
//     the lowest sequence number it names, and the records from there on
//     are delivered again; an error, a panic, a timeout, or a failure
//     naming no record of the batch fails it whole
//     (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html);
//   - a failed batch is retried after RetryBackoff, at most MaxRetries
//     times (MaximumRetryAttempts; negative: until it succeeds, Lambda's
//     default -1); then it is skipped and logged as an error with its
//     shard and sequence numbers, which is what Lambda hands an on-failure
//     destination (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html).
//
// Its checkpoints live in memory: a restarted dev server reads every
// shard from its oldest record again, as a new event source mapping with
// TRIM_HORIZON would.
type StreamPoller struct {
	Source          StreamSource
	Handler         StreamHandler
	BatchSize       int
	BatchWindow     time.Duration
	FunctionTimeout time.Duration
	MaxRetries      int
	RetryBackoff    time.Duration
	// PollEvery is how often an idle shard is read (Lambda: four times a
	// second) and DiscoverEvery how often the shards are listed; zero
	// means 250 ms and 1 s.
	PollEvery     time.Duration
	DiscoverEvery time.Duration
	Logger        *slog.Logger
	// MemoryMB is the function's configured memory, which Usage bills, so
	// the benchmark can price the notifier's stream invocations as it
	// prices the worker's.
	MemoryMB int
	inflight sync.WaitGroup // handlers still running, late ones included
	meter    meter
}

// Usage is what the invocations so far would be billed for by Lambda.
func (p *StreamPoller) Usage() Usage { return p.meter.usage() }

// Run polls every shard until ctx ends. In-flight invocations are
// cancelled with it and awaited, late ones included; nothing they report
// is checkpointed.
func (p *StreamPoller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	started := map[string]bool{}
	var mu sync.Mutex
	ended := map[string]bool{} // shards read to their end
	for ctx.Err() == nil {
		shards, err := p.Source.Shards(ctx)
		if err != nil && ctx.Err() == nil {
			p.Logger.Warn("stream poller: listing the shards failed", "err", err)
		}
		for id, parent := range shards {
			mu.Lock()
			ready := parent == "" || ended[parent] || !has(shards, parent)
			mu.Unlock()
			if started[id] || !ready {
				continue
			}
			started[id] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.shard(ctx, id) {
					mu.Lock()
					ended[id] = true
					mu.Unlock()
				}
			}()
		}
		sleep(ctx, orDefault(p.DiscoverEvery, time.Second))
	}
	wg.Wait()
	p.inflight.Wait()
}

func has(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// reader is one shard's read position and the records read from it but
// not yet checkpointed, kept in memory as Lambda keeps the batch it
// retries.
type reader struct {
	shard    string
	iterator string // "" when a new one is needed
	last     string // sequence number of the last record read
	closed   bool   // the shard is closed and read to its end
	pending  []events.DynamoDBEventRecord
	failures int // consecutive failed invocations at the checkpoint
}

// shard delivers one shard's records until ctx ends (false) or the shard
// is closed and every record of it is checkpointed (true).
func (p *StreamPoller) shard(ctx context.Context, id string) bool {
	r := &reader{shard: id}
	for ctx.Err() == nil {
		p.gather(ctx, r)
		if len(r.pending) == 0 {
			if r.closed {
				return true
			}
			continue
		}
		p.deliver(ctx, r)
	}
	return false
}

// gather reads until a batch is full, the batching window after the
// first record has passed, or the shard has ended. Records already
// pending (a batch being retried) go out after one more read.
func (p *StreamPoller) gather(ctx context.Context, r *reader) {
	retry := len(r.pending) > 0
	var end time.Time
	for ctx.Err() == nil && !r.closed && len(r.pending) < p.BatchSize {
		got := p.read(ctx, r)
		if retry {
			return
		}
		if len(r.pending) == 0 {
			sleep(ctx, orDefault(p.PollEvery, 250*time.Millisecond))
			continue
		}
		if end.IsZero() {
			end = time.Now().Add(p.BatchWindow)
		}
		if !time.Now().Before(end) {
			return
		}
		if got == 0 {
			sleep(ctx, min(orDefault(p.PollEvery, 250*time.Millisecond), time.Until(end)))
		}
	}
}

// read appends what one GetRecords returns to r.pending and says how many
// records it added. A record at or before the last one read is dropped: a
// new iterator after the last record must not deliver it twice (kumo
// v0.33.1 ignores AFTER_SEQUENCE_NUMBER and starts at the trim horizon).
func (p *StreamPoller) read(ctx context.Context, r *reader) int {
	if r.iterator == "" {
		it, err := p.Source.Iterator(ctx, r.shard, r.last)
		if err != nil {
			if ctx.Err() == nil {
				p.Logger.Warn("stream poller: no shard iterator", "shard", r.shard, "err", err)
				sleep(ctx, time.Second)
			}
			return 0
		}
		r.iterator = it
	}
	recs, next, err := p.Source.Records(ctx, r.iterator, p.BatchSize-len(r.pending))
	if err != nil {
		if ctx.Err() == nil {
			p.Logger.Warn("stream poller: reading the shard failed; resuming after the last record read", "shard", r.shard, "err", err)
			r.iterator = ""
			sleep(ctx, time.Second)
		}
		return 0
	}
	added := 0
	for _, rec := range recs {
		if r.last != "" && !after(rec.Change.SequenceNumber, r.last) {
			continue
		}
		r.pending = append(r.pending, rec)
		r.last = rec.Change.SequenceNumber
		added++
	}
	r.iterator, r.closed = next, next == ""
	return added
}

// after reports whether sequence number a comes after b: both are
// decimal numbers of up to 40 digits, too long for an integer.
func after(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// deliver invokes the handler with r's pending records and checkpoints
// what it answered.
func (p *StreamPoller) deliver(ctx context.Context, r *reader) {
	batch := r.pending
	resp, ok := p.call(ctx, batch)
	if ctx.Err() != nil {
		return // stopping: checkpoint nothing
	}
	done := len(batch) // records checkpointed
	if ok {
		done, ok = checkpoint(batch, resp)
		if !ok {
			p.Logger.Error("stream poller: a batch item failure names no record of the batch; the whole batch fails", "shard", r.shard)
		}
	}
	if !ok {
		done = 0
	}
	r.pending = r.pending[done:]
	if done == len(batch) {
		r.failures = 0
		return
	}
	if done > 0 {
		r.failures = 0 // the checkpoint moved: the count starts again at the failed record
	}
	r.failures++
	failed := batch[done:]
	if p.MaxRetries >= 0 && r.failures > p.MaxRetries {
		p.Logger.Error("stream poller: batch failed and its retries are used up; skipping it, as Lambda sends it to an on-failure destination",
			"shard", r.shard, "first_sequence", failed[0].Change.SequenceNumber, "last_sequence", failed[len(failed)-1].Change.SequenceNumber,
			"records", len(failed), "retries", p.MaxRetries)
		r.pending = r.pending[len(failed):]
		r.failures = 0
		return
	}
	sleep(ctx, orDefault(p.RetryBackoff, time.Second))
}

// checkpoint returns how many records of batch the response lets the
// checkpoint pass: all of them without failures, else those before the
// lowest sequence number named. It is false when a failure names no
// record of the batch (an empty or unknown itemIdentifier), which fails
// the whole batch.
func checkpoint(batch []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse) (int, bool) {
	index := make(map[string]int, len(batch))
	for i, rec := range batch {
		index[rec.Change.SequenceNumber] = i
	}
	done := len(batch)
	for _, f := range resp.BatchItemFailures {
		i, ok := index[f.ItemIdentifier]
		if !ok {
			return 0, false
		}
		done = min(done, i)
	}
	return done, true
}

// call runs one invocation (see invocation); a failed one leaves the
// checkpoint where it was, so the whole batch is delivered again.
func (p *StreamPoller) call(ctx context.Context, batch []events.DynamoDBEventRecord) (events.DynamoDBEventResponse, bool) {
	in := invocation{function: "stream", failed: "the whole batch is retried", timeout: p.FunctionTimeout,
		inflight: &p.inflight, logger: p.Logger}
	start := time.Now()
	defer func() { p.meter.record(time.Since(start), p.FunctionTimeout, p.MemoryMB) }()
	return invoke(ctx, in, p.Handler, events.DynamoDBEvent{Records: batch}, len(batch))
}
