package reconciler_test

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/reconciler"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/sqs"
)

// backlogSizes are the backlogs TestSweepCostUnderABacklog measures on
// top of its 2,000-job check (make bench-reconciler passes
// 5000,20000,50000); each is seeded, swept once and printed.
var backlogSizes = flag.String("backlog", "", "comma-separated numbers of queued stale jobs to measure one sweep over (e.g. 5000,20000,50000)")

// backlogBudget is the ExamineMax of the -backlog sweeps, 0 the default;
// one at least as large as the backlog examines every candidate, oldest
// first, as every sweep did before the budget: the figures before it.
var backlogBudget = flag.Int("examine", 0, "ExamineMax of the -backlog sweeps (0: the default; 1000000: every candidate, as before the budget)")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(awstest.Main(m))
}

// stack is a table and queues on the emulator: the store and queue the
// sweep uses count their calls; seed writes around the counter.
type stack struct {
	store *dynamodb.Store
	queue *sqs.Queue
	calls *awsclient.Counter
	plain *ddb.Client
	table string
	url   string
}

func newStack(t *testing.T) stack {
	t.Helper()
	ctx := context.Background()
	calls := awsclient.NewCounter()
	counted, plainCfg := awstest.Config(t, calls), awstest.Config(t, nil)
	s := settings.Defaults()
	s.Prefix = awstest.Prefix(t)
	st := stack{calls: calls, plain: awsclient.DynamoDB(plainCfg), table: s.Prefix + "-jobs"}
	if err := dynamodb.CreateTable(ctx, st.plain, st.table, s); err != nil {
		t.Fatal(err)
	}
	plainSQS := awsclient.SQS(plainCfg)
	url, dlq, err := sqs.CreateQueues(ctx, plainSQS, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = st.plain.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(st.table)})
		for _, u := range []string{url, dlq} {
			_, _ = plainSQS.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	st.store = dynamodb.New(awsclient.DynamoDB(counted), st.table, s)
	st.queue, st.url = sqs.New(awsclient.SQS(counted), url, dlq), url
	// Messages wait in the queue: the sweep runs as under a backlog.
	for i := range 10 {
		if err := sqs.New(plainSQS, url, dlq).Send(ctx, job.NewID("t", "waiting-"+strconv.Itoa(i)), "t"); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// encoder is a store client that keeps each PutItem's item instead of
// sending it: store.Create's own encoding, which seed then writes 25 items
// a BatchWriteItem call.
type encoder struct {
	dynamodb.Client
	items []map[string]types.AttributeValue
}

func (e *encoder) PutItem(_ context.Context, in *ddb.PutItemInput, _ ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	e.items = append(e.items, in.Item)
	return &ddb.PutItemOutput{}, nil
}

// seed writes jobs straight into the table, through the store's encoding.
func (st stack) seed(t *testing.T, jobs []job.Job) {
	t.Helper()
	enc := &encoder{}
	s := dynamodb.New(enc, st.table, settings.Defaults())
	for _, j := range jobs {
		if _, err := s.Create(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 8)
	for start := 0; start < len(enc.items); start += 25 {
		reqs := make([]types.WriteRequest, 0, 25)
		for _, it := range enc.items[start:min(start+25, len(enc.items))] {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for pending := map[string][]types.WriteRequest{st.table: reqs}; len(pending[st.table]) > 0; {
				out, err := st.plain.BatchWriteItem(context.Background(), &ddb.BatchWriteItemInput{RequestItems: pending})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				pending = out.UnprocessedItems
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("seed: %v", err)
	default:
	}
}

// queuedBacklog is n queued jobs, untouched since they were created
// between two hours and eleven minutes before now (oldest first), each
// with a 200-byte prompt: a backlog older than the sweep's horizon.
func queuedBacklog(now time.Time, n int) []job.Job {
	input, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: strings.Repeat("Summarise the ticket. ", 9)}}, MaxTokens: 200})
	span := 2*time.Hour - 11*time.Minute
	out := make([]job.Job, n)
	for i := range n {
		created := job.Millis(now.Add(-2 * time.Hour).Add(span * time.Duration(i) / time.Duration(max(n, 1))))
		key := "backlog-" + strconv.Itoa(i)
		out[i] = job.Job{ID: job.NewID("tenant", key), Tenant: "tenant", RequestKey: key, InputHash: "sha256:" + strings.Repeat("0", 64),
			Model: "default", Input: input, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(5), Deadline: now.Add(24 * time.Hour),
			Version: 1, CreatedAt: created, UpdatedAt: created}
	}
	return out
}

// sweepCalls is one sweep's AWS calls by operation, and what it did.
type sweepCalls struct {
	calls map[string]int
	rep   reconciler.Report
	took  time.Duration
}

func (s sweepCalls) String() string {
	var ops []string
	for _, op := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.calls {
			if !yield(k) {
				return
			}
		}
	}) {
		ops = append(ops, fmt.Sprintf("%s=%d", op, s.calls[op]))
	}
	return fmt.Sprintf("%s; report %+v; %s", strings.Join(ops, " "), s.rep, s.took.Round(time.Millisecond))
}

// sweep runs r once and counts its calls.
func (st stack) sweep(t *testing.T, r *reconciler.Reconciler) sweepCalls {
	t.Helper()
	st.calls.Reset()
	began := time.Now()
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sweepCalls{calls: st.calls.Snapshot(), rep: rep, took: time.Since(began)}
}

// checkBound fails t if the sweep made more calls than a sweep examining
// at most examineMax candidates may: one conditional write each, one
// GetItem each (kumo answers a refused write with no item, so the store
// reads it), a send each (at most resendMax of them queued), a Query per
// shard of the active index (kumo answers each in one page), one backlog
// read and one receive of the empty DLQ.
func checkBound(t *testing.T, got sweepCalls, examineMax, resendMax int) {
	t.Helper()
	shards := settings.Defaults().ActiveShards
	most := map[string]int{"DynamoDB.UpdateItem": examineMax, "DynamoDB.GetItem": examineMax, "SQS.SendMessage": examineMax,
		"DynamoDB.Query": shards, "SQS.GetQueueAttributes": 1, "SQS.ReceiveMessage": 1}
	for op, n := range got.calls {
		if bound, ok := most[op]; !ok || n > bound {
			t.Errorf("%s: %d calls, want at most %d", op, n, bound)
		}
	}
	if got.rep.Examined > examineMax || got.rep.Queued > resendMax {
		t.Errorf("report %+v: want at most %d examined and %d queued re-sent", got.rep, examineMax, resendMax)
	}
}

// TestSweepCostUnderABacklog measures one sweep's AWS calls, by
// operation, over a backlog of queued jobs older than the horizon, on the
// emulator, and checks they stay within the sweep's budget: 2,000 jobs
// with a budget of 500 every run, and the sizes -backlog names with the
// budget -examine names (make bench-reconciler; docs/benchmarks.md,
// "Reconciler under a backlog").
func TestSweepCostUnderABacklog(t *testing.T) {
	type size struct{ jobs, examineMax int }
	sizes := []size{{2000, 500}}
	for _, f := range strings.FieldsFunc(*backlogSizes, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("-backlog %q: want positive numbers", *backlogSizes)
		}
		sizes = append(sizes, size{n, *backlogBudget})
	}
	for _, sz := range sizes {
		name := fmt.Sprintf("%d-jobs-default-budget", sz.jobs)
		if sz.examineMax > 0 {
			name = fmt.Sprintf("%d-jobs-budget-%d", sz.jobs, sz.examineMax)
		}
		t.Run(name, func(t *testing.T) {
			st := newStack(t)
			began := time.Now()
			st.seed(t, queuedBacklog(time.Now(), sz.jobs))
			seeded := time.Since(began)
			r := reconciler.New(reconciler.Config{Store: st.store, Queue: st.queue, After: 10 * time.Minute, ResendMax: 100, ExamineMax: sz.examineMax})
			got := st.sweep(t, r)
			t.Logf("N=%d (seeded in %s): %s", sz.jobs, seeded.Round(time.Millisecond), got)
			examineMax := cmp.Or(sz.examineMax, 2000) // the default
			if got.rep.Candidates != sz.jobs || got.rep.Examined != min(sz.jobs, examineMax) || got.rep.Queued != 100 {
				t.Errorf("report %+v: want %d candidates, %d examined, 100 queued re-sent", got.rep, sz.jobs, min(sz.jobs, examineMax))
			}
			checkBound(t, got, examineMax, 100)
		})
	}
}

// recordingQueue is the real queue, remembering the ids it re-sends.
type recordingQueue struct {
	*sqs.Queue
	mu   sync.Mutex
	sent []string
}

func (q *recordingQueue) Send(ctx context.Context, id, tenant string) error {
	q.mu.Lock()
	q.sent = append(q.sent, id)
	q.mu.Unlock()
	return q.Queue.Send(ctx, id, tenant)
}

// TestResentWithinTheBoundOnTheEmulator: among 2,000 queued jobs older
// than the horizon on the emulator, with a budget of 500 (a head of 250,
// a rotation of 250), the job whose message was lost with 320
// never-nudged jobs ahead of it is re-sent in sweep floor(320/100) + 1 = 4,
// and a younger job whose worker died within ceil((2,001 - 250) / 250) = 8
// sweeps, each sweep within the budget.
func TestResentWithinTheBoundOnTheEmulator(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	now := time.Now()
	jobs := queuedBacklog(now, 2000)
	lost := jobs[320].ID
	died := jobs[1999].CreatedAt.Add(-time.Minute)
	dead := job.Job{ID: job.NewID("tenant", "dead-worker"), Tenant: "tenant", RequestKey: "dead-worker", InputHash: jobs[0].InputHash,
		Model: "default", Input: jobs[0].Input, State: job.Running, Attempts: 1, MaxAttempts: 3, Budget: job.Cents(5), LeaseOwner: "w",
		LeaseUntil: job.Millis(died), Deadline: now.Add(24 * time.Hour), Version: 2, CreatedAt: job.Millis(died.Add(-time.Minute)), UpdatedAt: job.Millis(died)}
	st.seed(t, append(jobs, dead))
	q := &recordingQueue{Queue: st.queue}
	r := reconciler.New(reconciler.Config{Store: st.store, Queue: q, After: 10 * time.Minute, ResendMax: 100, ExamineMax: 500})
	first := map[string]int{}
	for sweep := 1; sweep <= 8 && (first[lost] == 0 || first[dead.ID] == 0); sweep++ {
		got := st.sweep(t, r)
		checkBound(t, got, 500, 100)
		for _, id := range q.sent {
			if first[id] == 0 {
				first[id] = sweep
			}
		}
	}
	t.Logf("first re-sent: the lost message in sweep %d, the dead worker's job in sweep %d", first[lost], first[dead.ID])
	if first[lost] != 4 {
		t.Errorf("the lost message was first re-sent in sweep %d, want 4", first[lost])
	}
	if s := first[dead.ID]; s == 0 || s > 8 {
		t.Errorf("the dead worker's job was first re-sent in sweep %d, want by sweep 8", s)
	}
}
