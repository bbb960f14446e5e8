package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// stream is an in-memory StreamSource: shards of numbered records, an
// iterator being "shard/position".
type stream struct {
	mu          sync.Mutex
	seq         int
	shards      map[string]*fakeShard
	order       []string
	failReads   int  // Records calls left to fail
	ignoreAfter bool // start every iterator at the trim horizon, as kumo does
	// read, when set, is called after each read that returned records,
	// unlocked: a test acts at a moment the poller has reached, not at
	// one a timer guesses it will have.
	read func()
}

type fakeShard struct {
	parent  string
	records []events.DynamoDBEventRecord
	closed  bool
}

func newStream() *stream { return &stream{shards: map[string]*fakeShard{}} }

// add appends n records to shard (made with parent), returning their
// sequence numbers.
func (s *stream) add(shard, parent string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shards[shard]
	if sh == nil {
		sh = &fakeShard{parent: parent}
		s.shards[shard] = sh
		s.order = append(s.order, shard)
	}
	var seqs []string
	for range n {
		s.seq++
		seq := strconv.Itoa(100 + s.seq) // "101", "102", ...
		sh.records = append(sh.records, events.DynamoDBEventRecord{EventID: "e" + seq, EventName: "MODIFY", EventSource: "aws:dynamodb",
			Change: events.DynamoDBStreamRecord{SequenceNumber: seq, Keys: map[string]events.DynamoDBAttributeValue{"id": events.NewStringAttribute(shard)}}})
		seqs = append(seqs, seq)
	}
	return seqs
}

func (s *stream) close(shard string) {
	s.mu.Lock()
	s.shards[shard].closed = true
	s.mu.Unlock()
}

func (s *stream) Shards(context.Context) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for id, sh := range s.shards {
		out[id] = sh.parent
	}
	return out, nil
}

func (s *stream) Iterator(_ context.Context, shard, after string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pos := 0
	if after != "" && !s.ignoreAfter {
		for i, r := range s.shards[shard].records {
			if r.Change.SequenceNumber == after {
				pos = i + 1
			}
		}
	}
	return fmt.Sprintf("%s/%d", shard, pos), nil
}

func (s *stream) Records(_ context.Context, iterator string, max int) ([]events.DynamoDBEventRecord, string, error) {
	out, next, err := s.records(iterator, max)
	if s.read != nil && len(out) > 0 {
		s.read()
	}
	return out, next, err
}

func (s *stream) records(iterator string, max int) ([]events.DynamoDBEventRecord, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failReads > 0 {
		s.failReads--
		return nil, "", errors.New("ExpiredIteratorException")
	}
	shard, p, _ := strings.Cut(iterator, "/")
	pos, _ := strconv.Atoi(p)
	sh := s.shards[shard]
	end := min(pos+max, len(sh.records))
	out := slices.Clone(sh.records[pos:end])
	if sh.closed && end == len(sh.records) {
		return out, "", nil
	}
	return out, fmt.Sprintf("%s/%d", shard, end), nil
}

// invocations records what a StreamHandler was given, batch by batch.
type invocations struct {
	mu      sync.Mutex
	batches [][]string // sequence numbers
}

func (v *invocations) add(ev events.DynamoDBEvent) []string {
	var seqs []string
	for _, r := range ev.Records {
		seqs = append(seqs, r.Change.SequenceNumber)
	}
	v.mu.Lock()
	v.batches = append(v.batches, seqs)
	v.mu.Unlock()
	return seqs
}

func (v *invocations) get() [][]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.batches)
}

func (v *invocations) flat() []string { return slices.Concat(v.get()...) }

func newStreamPoller(src StreamSource, logs *logBuffer, h StreamHandler) *StreamPoller {
	return &StreamPoller{Source: src, Handler: h, BatchSize: 5, FunctionTimeout: 2 * time.Second, MaxRetries: -1,
		RetryBackoff: 10 * time.Millisecond, PollEvery: 10 * time.Millisecond, DiscoverEvery: 20 * time.Millisecond, Logger: logs.logger()}
}

// runStream runs p until done holds (or a minute passes: the bound of a
// stuck run, not of a slow machine's), then stops it, checks that it
// stops, and answers how long it ran.
func runStream(t *testing.T, p *StreamPoller, done func() bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	start := time.Now()
	go func() { p.Run(ctx); close(stopped) }()
	deadline := time.Now().Add(time.Minute)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for a wrong extra invocation
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream poller did not stop")
	}
	return time.Since(start)
}

func until(v *invocations, n int) func() bool { return func() bool { return len(v.flat()) >= n } }

// TestStreamPollerDeliversInOrder: Lambda reads a shard's records in
// order and invokes the function with one batch at a time per shard
// (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html): records
// written while the poller runs all arrive, once each, in order, in
// batches of at most BatchSize, with their fields intact.
func TestStreamPollerDeliversInOrder(t *testing.T) {
	src := newStream()
	want := src.add("s1", "", 7)
	v := &invocations{}
	var running, overlapped sync.Mutex
	var overlaps int
	p := newStreamPoller(src, &logBuffer{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if !running.TryLock() {
			overlapped.Lock()
			overlaps++
			overlapped.Unlock()
		} else {
			defer running.Unlock()
		}
		for _, r := range ev.Records {
			if r.EventID != "e"+r.Change.SequenceNumber || r.Change.Keys["id"].String() != "s1" {
				t.Errorf("record %+v lost its fields", r)
			}
		}
		v.add(ev)
		time.Sleep(20 * time.Millisecond)
		return events.DynamoDBEventResponse{}, nil
	})
	more := make(chan []string, 1)
	time.AfterFunc(150*time.Millisecond, func() { more <- src.add("s1", "", 6) })
	runStream(t, p, until(v, 13))
	want = append(want, <-more...)
	if got := v.flat(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	for _, b := range v.get() {
		if len(b) > 5 {
			t.Errorf("batch of %d records, BatchSize is 5", len(b))
		}
	}
	if overlaps > 0 {
		t.Errorf("%d invocations overlapped on one shard", overlaps)
	}
}

// TestStreamPollerBatchWindow: with a batching window the poller keeps
// reading until the batch is full or the window has passed since its
// first record (MaximumBatchingWindowInSeconds,
// https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html).
func TestStreamPollerBatchWindow(t *testing.T) {
	src := newStream()
	src.add("s1", "", 2)
	v := &invocations{}
	p := newStreamPoller(src, &logBuffer{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		v.add(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	// Two more records come once the first two were read, inside a window
	// no machine outlasts; the batch is full at four.
	p.BatchSize, p.BatchWindow = 4, time.Minute
	var more sync.Once
	src.read = func() { more.Do(func() { src.add("s1", "", 2) }) }
	runStream(t, p, until(v, 4))
	if got := v.get(); len(got) != 1 || len(got[0]) != 4 {
		t.Fatalf("batches %v, want one of 4 records gathered in the window", got)
	}
}

// TestStreamPollerBatchItemFailureResumes: with ReportBatchItemFailures
// Lambda checkpoints before the lowest sequence number the function
// names and retries every record from there
// (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html).
func TestStreamPollerBatchItemFailureResumes(t *testing.T) {
	src := newStream()
	seqs := src.add("s1", "", 5) // 101..105
	v := &invocations{}
	first := true
	p := newStreamPoller(src, &logBuffer{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		v.add(ev)
		if first {
			first = false
			// Two failures: the lowest one sets the checkpoint.
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqs[3]}, {ItemIdentifier: seqs[2]}}}, nil
		}
		return events.DynamoDBEventResponse{}, nil
	})
	runStream(t, p, until(v, 8))
	want := [][]string{seqs, seqs[2:]}
	if got := v.get(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", got, want)
	}
}

// TestStreamPollerFailedInvocationRetriesTheBatch: an error, a panic, a
// timeout, or a batch item failure whose itemIdentifier is empty or names
// no record of the batch fails the whole batch, which is retried from its
// first record
// (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html,
// "Success and failure conditions").
func TestStreamPollerFailedInvocationRetriesTheBatch(t *testing.T) {
	for name, fail := range map[string]func(ctx context.Context) (events.DynamoDBEventResponse, error){
		"error": func(context.Context) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, errors.New("boom")
		},
		"panic": func(context.Context) (events.DynamoDBEventResponse, error) { panic("boom") },
		"timeout": func(ctx context.Context) (events.DynamoDBEventResponse, error) {
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // answers late, reporting success
			return events.DynamoDBEventResponse{}, nil
		},
		"unknown item": func(context.Context) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "999"}}}, nil
		},
		"empty item": func(context.Context) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{}}}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := newStream()
			seqs := src.add("s1", "", 3)
			logs := &logBuffer{}
			v := &invocations{}
			var calls atomic.Int64
			p := newStreamPoller(src, logs, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				v.add(ev)
				if calls.Add(1) == 1 {
					return fail(ctx)
				}
				return events.DynamoDBEventResponse{}, nil
			})
			p.FunctionTimeout = 200 * time.Millisecond
			runStream(t, p, until(v, 6))
			want := [][]string{seqs, seqs}
			if got := v.get(); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("batches %v, want the whole batch twice: %v", got, want)
			}
			if !logs.errorLogged("stream") {
				t.Errorf("the failure is not logged as an error:\n%s", logs)
			}
		})
	}
}

// TestStreamPollerSkipsAfterMaxRetries: after MaximumRetryAttempts
// retries Lambda discards the batch (sending it to an on-failure
// destination when there is one) and goes on with the shard
// (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html).
// The emulator logs the skipped batch as an error. A partial failure
// counts as a failed invocation at the new checkpoint.
func TestStreamPollerSkipsAfterMaxRetries(t *testing.T) {
	for name, c := range map[string]struct {
		retries int
		partial bool
		want    func(s []string) [][]string
	}{
		"no retries":      {0, false, func(s []string) [][]string { return [][]string{s[:3], s[3:]} }},
		"two retries":     {2, false, func(s []string) [][]string { return [][]string{s[:3], s[:3], s[:3], s[3:]} }},
		"partial, retry1": {1, true, func(s []string) [][]string { return [][]string{s[:3], s[1:3], s[3:]} }},
	} {
		t.Run(name, func(t *testing.T) {
			src := newStream()
			seqs := src.add("s1", "", 3)
			logs := &logBuffer{}
			v := &invocations{}
			p := newStreamPoller(src, logs, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				got := v.add(ev)
				if !slices.Contains(got, seqs[1]) {
					return events.DynamoDBEventResponse{}, nil
				}
				if c.partial {
					return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqs[1]}}}, nil
				}
				return events.DynamoDBEventResponse{}, errors.New("always")
			})
			p.MaxRetries = c.retries
			var later []string
			var done bool
			runStream(t, p, func() bool {
				if !done && len(v.get()) == len(c.want(seqs))-1 {
					done = true
					later = src.add("s1", "", 2)
				}
				return done && slices.Contains(v.flat(), later[len(later)-1])
			})
			want := c.want(append(seqs, later...))
			if got := v.get(); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("batches %v, want %v", got, want)
			}
			if !logs.errorLogged("on-failure destination", `"last_sequence":"`+seqs[2]+`"`) {
				t.Errorf("the skipped batch is not logged as an error with its sequence numbers:\n%s", logs)
			}
		})
	}
}

// TestStreamPollerResumesAfterReadErrors: a read that fails (an expired
// iterator) resumes after the last record read, never before it, even
// when the source restarts an AFTER_SEQUENCE_NUMBER iterator at the trim
// horizon (kumo v0.33.1 does).
func TestStreamPollerResumesAfterReadErrors(t *testing.T) {
	src := newStream()
	src.ignoreAfter = true
	want := src.add("s1", "", 4)
	v := &invocations{}
	p := newStreamPoller(src, &logBuffer{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		v.add(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	p.BatchSize = 2
	more := make(chan []string, 1)
	time.AfterFunc(100*time.Millisecond, func() {
		src.mu.Lock()
		src.failReads = 2
		src.mu.Unlock()
		more <- src.add("s1", "", 3)
	})
	runStream(t, p, until(v, 7))
	want = append(want, <-more...)
	if got := v.flat(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// TestStreamPollerFollowsNewShards: a shard that appears while the
// poller runs is read too, and a child shard only after its parent is
// closed and delivered to its end, so one item's changes stay in order
// (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).
func TestStreamPollerFollowsNewShards(t *testing.T) {
	src := newStream()
	parent := src.add("p", "", 3)
	v := &invocations{}
	var release sync.Once
	gate := make(chan struct{})
	p := newStreamPoller(src, &logBuffer{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		switch ev.Records[0].Change.Keys["id"].String() {
		case "p":
			<-gate // the parent is slow...
		case "o":
			defer release.Do(func() { close(gate) }) // ...until the unrelated shard was delivered
		}
		v.add(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	p.BatchSize = 1
	child := src.add("c", "p", 2)
	other := src.add("o", "", 1)
	src.close("p")
	// A poller that made the unrelated shard wait for the parent would
	// wait forever: the gate opens after 10 s for it, and the order
	// below fails it.
	time.AfterFunc(10*time.Second, func() { release.Do(func() { close(gate) }) })
	runStream(t, p, until(v, 6))
	got := v.flat()
	of := func(want []string) []string {
		return slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !slices.Contains(want, s) })
	}
	if !slices.Equal(of(parent), parent) || !slices.Equal(of(child), child) {
		t.Errorf("delivered %v: each shard's records must arrive once, in order", got)
	}
	ip, ic, io := slices.Index(got, parent[2]), slices.Index(got, child[0]), slices.Index(got, other[0])
	if ip < 0 || ic < 0 || ic < ip {
		t.Errorf("delivered %v: the child's first record %s must follow the parent's last %s", got, child[0], parent[2])
	}
	if io < 0 || io > ip {
		t.Errorf("delivered %v: the unrelated shard's record %s waited for the slow parent", got, other[0])
	}
}

// TestServerRunsTheStreamPoller: a Server with Streams set delivers the
// stream's records alongside the queue, and stops both with its context.
func TestServerRunsTheStreamPoller(t *testing.T) {
	src := newStream()
	want := src.add("s1", "", 2)
	v := &invocations{}
	logs := &logBuffer{}
	s := &Server{
		Gateway: &Gateway{Timeout: time.Second, Logger: logs.logger(),
			Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}},
		Poller: &Poller{Source: &source{}, BatchSize: 10, Concurrency: 1, FunctionTimeout: time.Second, Logger: logs.logger(),
			Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
				return events.SQSEventResponse{}, nil
			}},
		Streams: newStreamPoller(src, logs, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			v.add(ev)
			return events.DynamoDBEventResponse{}, nil
		}),
		Logger: logs.logger(),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	deadline := time.Now().Add(5 * time.Second)
	for !until(v, 2)() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
	if got := v.flat(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// TestStreamPollerMetersInvocationsAsLambdaBills: as the SQS poller, each
// stream invocation is billed its duration rounded up to the millisecond
// times the memory (usage.go), so the notifier's share of a job can be
// priced.
func TestStreamPollerMetersInvocationsAsLambdaBills(t *testing.T) {
	src := newStream()
	src.add("s1", "", 7) // two batches of at most 5
	v := &invocations{}
	p := newStreamPoller(src, &logBuffer{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		v.add(ev)
		time.Sleep(30 * time.Millisecond)
		return events.DynamoDBEventResponse{}, nil
	})
	p.MemoryMB = 512
	ran := runStream(t, p, until(v, 7))
	u := p.Usage()
	if u.Invocations != len(v.get()) || u.Invocations < 2 {
		t.Fatalf("%d invocations metered, %d made (want at least 2)", u.Invocations, len(v.get()))
	}
	// One shard's invocations come one at a time: together they took at
	// most the run (each rounded up), however slow the machine.
	if n := time.Duration(u.Invocations); u.Billed%time.Millisecond != 0 || u.Billed < n*30*time.Millisecond || u.Billed > ran+n*time.Millisecond {
		t.Fatalf("billed %s for %d invocations of 30 ms, want whole milliseconds, within the run's %s", u.Billed, u.Invocations, ran)
	}
	if want := u.Billed.Seconds() / 2; u.GBSeconds < want-1e-9 || u.GBSeconds > want+1e-9 {
		t.Fatalf("%.6f GB-s, want %.6f (billed x 0.5 GB)", u.GBSeconds, want)
	}
}
