package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/replay"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type clock struct{}

func (clock) Now() time.Time { return now }

type queue struct {
	mu   sync.Mutex
	sent []string
}

func (q *queue) Send(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, id)
	return nil
}

// dlq is a dead letter queue in memory: received messages are hidden until
// deleted or made visible again.
type dlq struct {
	mu      sync.Mutex
	msgs    []events.SQSMessage
	hidden  map[string]bool
	deleted []string
}

func (d *dlq) ReceiveHidden(_ context.Context, max int, _, _ time.Duration) ([]events.SQSMessage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []events.SQSMessage
	for _, m := range d.msgs {
		if len(out) < max && !d.hidden[m.ReceiptHandle] {
			d.hidden[m.ReceiptHandle] = true
			out = append(out, m)
		}
	}
	return out, nil
}

func (d *dlq) Delete(_ context.Context, hs []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted = append(d.deleted, hs...)
	for _, h := range hs {
		delete(d.hidden, h)
	}
	d.msgs = slices.DeleteFunc(d.msgs, func(m events.SQSMessage) bool { return slices.Contains(hs, m.ReceiptHandle) })
	return nil
}

func (d *dlq) ChangeVisibility(_ context.Context, h string, v time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v == 0 {
		delete(d.hidden, h)
	}
	return nil
}

type fixture struct {
	store *memstore.Store
	queue *queue
	dlq   *dlq
	r     *replay.Replayer
	ids   map[string]string
}

// setup stores one job per kind of record a replay meets.
func setup(t *testing.T) *fixture {
	f := &fixture{store: memstore.New(), queue: &queue{}, dlq: &dlq{hidden: map[string]bool{}}, ids: map[string]string{}}
	f.r = replay.New(replay.Config{Store: f.store, Queue: f.queue, DeadLetters: f.dlq, Clock: clock{},
		Retention: job.Retention{Succeeded: time.Hour, Failed: 24 * time.Hour}})
	created := now.Add(-2 * time.Hour)
	kinds := map[string]func(*job.Job){
		"succeeded": func(j *job.Job) { j.State, j.Attempts = job.Succeeded, 1 },
		"cancelled": func(j *job.Job) { j.State, j.ErrorClass = job.Abandoned, job.Cancelled },
		"running-live": func(j *job.Job) {
			j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", now.Add(time.Minute)
		},
		"running-dead": func(j *job.Job) {
			j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", now.Add(-time.Minute)
		},
		"queued":        nil,
		"failed":        func(j *job.Job) { j.State, j.Attempts, j.ErrorClass, j.Cost = job.Failed, 4, job.Overloaded, 100 },
		"failed-2-left": func(j *job.Job) { j.State, j.Attempts, j.ErrorClass, j.Cost = job.Failed, 4, job.Overloaded, 1000-25 },
		"failed-broke":  func(j *job.Job) { j.State, j.Attempts, j.ErrorClass, j.Cost = job.Failed, 4, job.Overloaded, 1000-9 },
	}
	for kind, mut := range kinds {
		j := job.Job{ID: job.NewID("t", kind), Tenant: "t", RequestKey: kind, Model: "default", Input: json.RawMessage(`{}`),
			State: job.Queued, MaxAttempts: 4, Budget: 1000, Reserve: 10, Deadline: created.Add(15 * time.Minute),
			Version: 1, CreatedAt: created, UpdatedAt: created}
		if mut != nil {
			mut(&j)
		}
		if _, err := f.store.Create(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		f.ids[kind] = j.ID
	}
	return f
}

func TestJobOutcomes(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	want := map[string]replay.Outcome{
		"succeeded": replay.SkippedSucceeded, "cancelled": replay.SkippedAbandoned, "running-live": replay.SkippedRunning,
		"running-dead": replay.Resent, "queued": replay.Resent, "failed": replay.Replayed, "failed-2-left": replay.Replayed,
		"failed-broke": replay.RefusedBudget,
	}
	for kind, w := range want {
		if got := f.r.Job(ctx, f.ids[kind], replay.Options{Attempts: 5}); got != w {
			t.Errorf("%s: %s, want %s", kind, got, w)
		}
	}
	if got := f.r.Job(ctx, job.NewID("t", "missing"), replay.Options{}); got != replay.NotFound {
		t.Errorf("missing: %s", got)
	}
	sent := slices.Sorted(slices.Values(f.queue.sent))
	wantSent := slices.Sorted(slices.Values([]string{f.ids["running-dead"], f.ids["queued"], f.ids["failed"], f.ids["failed-2-left"]}))
	if !slices.Equal(sent, wantSent) {
		t.Fatalf("sent %v, want %v", sent, wantSent)
	}
	// The replay is an explicit, recorded transition with fresh attempts
	// (5 asked; the budget left, 25 at 10 a reserve, covers 2) and a fresh
	// deadline as long as the first.
	j, _ := f.store.Get(ctx, f.ids["failed-2-left"])
	if j.State != job.Queued || j.MaxAttempts != 4+2 || j.Replays != 1 || !j.ReplayedAt.Equal(now) || !j.Deadline.Equal(now.Add(15*time.Minute)) {
		t.Fatalf("replayed record %+v", j)
	}
	if j, _ := f.store.Get(ctx, f.ids["failed"]); j.MaxAttempts != 4+5 {
		t.Fatalf("a job with budget to spare gets what was asked: %+v", j)
	}
	if j, _ := f.store.Get(ctx, f.ids["succeeded"]); j.Version != 1 {
		t.Fatalf("a succeeded job was written: %+v", j)
	}
}

func TestDryRunWritesAndSendsNothing(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	sum, err := f.r.Failures(ctx, job.FailureQuery{Since: now.Add(-time.Hour), Until: now}, replay.Options{DryRun: true})
	if err != nil || sum.Total() != 0 {
		t.Fatalf("no job ended through the store's transitions, so the failure query finds none: %v %v", sum, err)
	}
	for kind, id := range f.ids {
		f.r.Job(ctx, id, replay.Options{DryRun: true})
		if j, _ := f.store.Get(ctx, id); j.Version != 1 {
			t.Fatalf("%s written by a dry run", kind)
		}
	}
	if len(f.queue.sent) != 0 {
		t.Fatalf("a dry run sent %v", f.queue.sent)
	}
}

func TestDeadLettersDeleteWhatWasHandled(t *testing.T) {
	f := setup(t)
	for i, kind := range []string{"succeeded", "failed", "queued", "running-live", "failed-broke"} {
		f.dlq.msgs = append(f.dlq.msgs, events.SQSMessage{MessageId: fmt.Sprint("m", i), ReceiptHandle: "r-" + kind, Body: `{"job_id":"` + f.ids[kind] + `"}`})
	}
	f.dlq.msgs = append(f.dlq.msgs, events.SQSMessage{MessageId: "poison", ReceiptHandle: "r-poison", Body: "not json"})

	dry, err := f.r.DeadLetters(context.Background(), 0, replay.Options{DryRun: true})
	if err != nil || dry.Total() != 6 || len(f.dlq.deleted) != 0 || len(f.dlq.hidden) != 0 {
		t.Fatalf("dry run: %v %v, deleted %v, still hidden %v", dry, err, f.dlq.deleted, f.dlq.hidden)
	}
	sum, err := f.r.DeadLetters(context.Background(), 0, replay.Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := replay.Summary{replay.SkippedSucceeded: 1, replay.Replayed: 1, replay.Resent: 1, replay.SkippedRunning: 1, replay.RefusedBudget: 1, replay.Unreadable: 1}
	if fmt.Sprint(sum) != fmt.Sprint(want) {
		t.Fatalf("summary %v, want %v", sum, want)
	}
	if len(f.dlq.msgs) != 1 || f.dlq.msgs[0].MessageId != "poison" || len(f.dlq.hidden) != 0 {
		t.Fatalf("left %v (hidden %v), want only the poison message, visible", f.dlq.msgs, f.dlq.hidden)
	}
}

func TestRateBoundsTheReplay(t *testing.T) {
	f := setup(t)
	for range 5 {
		f.dlq.msgs = append(f.dlq.msgs, events.SQSMessage{MessageId: fmt.Sprint(len(f.dlq.msgs)), ReceiptHandle: fmt.Sprint("h", len(f.dlq.msgs)),
			Body: `{"job_id":"` + f.ids["succeeded"] + `"}`})
	}
	start := time.Now()
	var seen int
	var mu sync.Mutex
	sum, err := f.r.DeadLetters(context.Background(), 0, replay.Options{Rate: 20, Progress: func(string, replay.Outcome) {
		mu.Lock()
		seen++
		mu.Unlock()
	}})
	if err != nil || sum[replay.SkippedSucceeded] != 5 || seen != 5 {
		t.Fatalf("%v %v, progress %d", sum, err, seen)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("5 jobs at 20/s took %s, want at least 200ms", took)
	}
}

func TestReplaysNeverGrowTheDeadlineOrPassTheLimits(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	// A job replayed an hour ago with a 15-minute window, failed again.
	id := f.ids["failed"]
	j, _ := f.store.Get(ctx, id)
	j.ReplayedAt, j.Deadline = now.Add(-time.Hour), now.Add(-time.Hour+15*time.Minute)
	st := memstore.New()
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	r := replay.New(replay.Config{Store: st, Queue: f.queue, Clock: clock{}, Limits: job.Limits{MaxMaxAttempts: 4, MaxDeadline: 10 * time.Minute}})
	if got := r.Job(ctx, id, replay.Options{Attempts: 50}); got != replay.Replayed {
		t.Fatalf("outcome %s", got)
	}
	got, _ := st.Get(ctx, id)
	if !got.Deadline.Equal(now.Add(10*time.Minute)) || got.MaxAttempts != j.Attempts+4 {
		t.Fatalf("deadline %s, max attempts %d: want the window clamped to 10m (not the hour since creation) and 4 fresh attempts", got.Deadline, got.MaxAttempts)
	}
}

func TestAnUnboundedRateIsNoLimit(t *testing.T) {
	f := setup(t)
	f.dlq.msgs = append(f.dlq.msgs, events.SQSMessage{MessageId: "m", ReceiptHandle: "h", Body: `{"job_id":"` + f.ids["succeeded"] + `"}`})
	sum, err := f.r.DeadLetters(context.Background(), 0, replay.Options{Rate: 1e12})
	if err != nil || sum[replay.SkippedSucceeded] != 1 {
		t.Fatalf("%v %v", sum, err)
	}
}

// Jobs replays a selection once per id, and Decided hears each outcome
// with the record it was decided on: what the console's dry run totals.
func TestJobsReplaysASelectionOnceEachAndTellsTheRecords(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	ids := []string{f.ids["failed"], f.ids["succeeded"], f.ids["failed"], f.ids["failed-broke"], job.NewID("t", "missing")}
	var mu sync.Mutex
	decided := map[string]replay.Outcome{}
	var remaining job.Nanocents
	o := replay.Options{DryRun: true, Decided: func(j job.Job, out replay.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		decided[j.ID] = out
		if out == replay.Replayed {
			remaining += j.Remaining()
		}
	}}
	sum, err := f.r.Jobs(ctx, ids, o)
	if err != nil || sum.Total() != 4 || sum[replay.Replayed] != 1 || sum[replay.SkippedSucceeded] != 1 ||
		sum[replay.RefusedBudget] != 1 || sum[replay.NotFound] != 1 {
		t.Fatalf("dry run summary %v, %v", sum, err)
	}
	if decided[f.ids["failed"]] != replay.Replayed || decided[f.ids["failed-broke"]] != replay.RefusedBudget || decided[""] != replay.NotFound {
		t.Fatalf("decided %v", decided)
	}
	if remaining != 1000-100 {
		t.Fatalf("the replayed job's budget left is %d, want 900", remaining)
	}
	if len(f.queue.sent) != 0 {
		t.Fatalf("a dry run sent %v", f.queue.sent)
	}
	sum, err = f.r.Jobs(ctx, ids, replay.Options{})
	if err != nil || sum[replay.Replayed] != 1 || !slices.Equal(f.queue.sent, []string{f.ids["failed"]}) {
		t.Fatalf("replay %v %v, sent %v", sum, err, f.queue.sent)
	}
}
