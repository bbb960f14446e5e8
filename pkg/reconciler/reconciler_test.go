package reconciler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/parking"
	"github.com/aijobs/aijobs/pkg/reconciler"
)

type queue struct {
	mu      sync.Mutex
	sent    []string
	fail    map[string]bool
	backlog int
	dead    []job.DeadLetter
}

func (q *queue) Backlog(context.Context) (int, error) { return q.backlog, nil }

func (q *queue) DeadLetterIDs(_ context.Context, max int, _ time.Duration) ([]job.DeadLetter, error) {
	return q.dead[:min(max, len(q.dead))], nil
}

func (q *queue) Send(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail[id] {
		return errors.New("sqs down")
	}
	q.sent = append(q.sent, id)
	return nil
}

type metrics struct {
	mu sync.Mutex
	m  map[string]float64
}

func (m *metrics) Emit(name string, v float64, _ string, dims map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[name+"/"+dims["State"]] += v
}

type clock struct{ t time.Time }

func (c clock) Now() time.Time { return c.t }

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestSweep(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	mk := func(key string, created, updated time.Time, mut func(*job.Job)) string {
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, Model: "default", Input: json.RawMessage(`{}`),
			State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: now.Add(time.Hour),
			Version: 1, CreatedAt: created, UpdatedAt: updated}
		if mut != nil {
			mut(&j)
		}
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	old := now.Add(-time.Hour)
	lost := mk("lost", old, old, nil)
	backingOff := mk("backing-off", old, old, func(j *job.Job) { j.NotBefore = now.Add(-time.Minute) })
	recent := mk("touched-recently", old, now.Add(-time.Minute), nil)
	young := mk("young", now.Add(-time.Minute), now.Add(-time.Minute), nil)
	dead := mk("dead-worker", old, old.Add(time.Minute), func(j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", old.Add(2*time.Minute)
	})
	busy := mk("busy-worker", old, now.Add(-5*time.Second), func(j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", now.Add(20*time.Second)
	})
	done := mk("done", old, old, func(j *job.Job) { j.State = job.Succeeded })
	unsendable := mk("unsendable", old, old, nil)

	q := &queue{fail: map[string]bool{unsendable: true}}
	m := &metrics{m: map[string]float64{}}
	r := reconciler.New(reconciler.Config{Store: st, Queue: q, After: 10 * time.Minute, Clock: clock{now}, Metrics: m, Parallel: 3})
	rep, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := reconciler.Report{Candidates: 6, Examined: 6, Queued: 1, Running: 1, Healthy: 3, Errors: 1} // young and done are no candidates
	if rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	slices.Sort(q.sent)
	if w := []string{dead, lost}; !slices.Equal(q.sent, sortIDs(w)) {
		t.Fatalf("sent %v, want %v", q.sent, sortIDs(w))
	}
	for _, id := range []string{backingOff, recent, young, busy, done} {
		if j, _ := st.Get(ctx, id); j.Nudges != 0 {
			t.Errorf("%s was nudged: %+v", id, j)
		}
	}
	if j, _ := st.Get(ctx, lost); j.Nudges != 1 || !j.UpdatedAt.Equal(now) {
		t.Fatalf("the lost job's record does not show the nudge: %+v", j)
	}
	if m.m["Reconciled/queued"] != 1 || m.m["Reconciled/running"] != 1 || m.m["ReconcileCandidates/"] != 6 || m.m["ReconcileErrors/"] != 1 {
		t.Fatalf("metrics %v", m.m)
	}

	// The next sweep, in the same period, re-sends nothing: every job it
	// found stale was touched by the first.
	q.fail = nil
	rep, err = r.Run(ctx)
	if err != nil || rep.Queued+rep.Running != 0 {
		t.Fatalf("second sweep: %+v %v", rep, err)
	}
}

func sortIDs(ids []string) []string { slices.Sort(ids); return ids }

// TestALostMessageIsResentUnderASustainedBacklog: while messages wait in
// the queue, an untouched queued job is most likely among them, but one may
// have lost its only message (its create's send failed and the client
// never retried). Each sweep re-sends at most ResendMax queued jobs, oldest
// first, each at most once while the backlog lasts, so a lost message is
// re-sent within ceil(older ones / ResendMax) sweeps and the backlog grows
// by at most ResendMax a sweep.
func TestALostMessageIsResentUnderASustainedBacklog(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	old := now.Add(-time.Hour)
	mk := func(key string, created time.Time, mut func(*job.Job)) string {
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1),
			Deadline: now.Add(2 * time.Hour), Version: 1, CreatedAt: created, UpdatedAt: created}
		if mut != nil {
			mut(&j)
		}
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	var queued []string // oldest first; the last is the one whose message was lost
	for i := range 7 {
		queued = append(queued, mk(fmt.Sprint("q", i), old.Add(time.Duration(i)*time.Minute), nil))
	}
	dead := mk("dead", old, func(j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", old.Add(time.Minute)
	})
	q := &queue{backlog: 5000}
	m := &metrics{m: map[string]float64{}}
	after := 10 * time.Minute
	var sent []string
	for run, want := range [][]string{
		// The dead worker's job is re-sent every sweep it is stale in,
		// outside the quota: its message is gone whatever the backlog.
		{dead, queued[0], queued[1], queued[2]},
		{dead, queued[3], queued[4], queued[5]},
		{dead, queued[6]},
		{dead}, // every queued job was re-sent once: the backlog is left alone
	} {
		at := now.Add(time.Duration(run) * after)
		q.sent = nil
		rep, err := reconciler.New(reconciler.Config{Store: st, Queue: q, After: after, ResendMax: 3, Clock: clock{at}, Metrics: m, Parallel: 2}).Run(ctx)
		if err != nil || rep.Queued > 3 || rep.Backlog != 5000 {
			t.Fatalf("sweep %d: report %+v %v: at most 3 queued re-sends a sweep", run, rep, err)
		}
		if !slices.Equal(sortIDs(q.sent), sortIDs(slices.Clone(want))) {
			t.Fatalf("sweep %d sent %v, want %v (oldest first)", run, q.sent, want)
		}
		sent = append(sent, q.sent...)
	}
	if !slices.Contains(sent, queued[6]) {
		t.Fatal("the youngest lost job was never re-sent")
	}
	if m.m["ReconcileBacklog/"] != 4*5000 {
		t.Fatalf("backlog metric %v", m.m)
	}
}

// TestWithoutABacklogEveryStaleQueuedJobIsResent: an empty queue means a
// stale queued job lost its message, however many there are.
func TestWithoutABacklogEveryStaleQueuedJobIsResent(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	old := now.Add(-time.Hour)
	for i := range 5 {
		key := fmt.Sprint("q", i)
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1),
			Deadline: now.Add(time.Hour), Version: 1, CreatedAt: old, UpdatedAt: old, Nudges: 2}
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	q := &queue{}
	rep, err := reconciler.New(reconciler.Config{Store: st, Queue: q, After: 10 * time.Minute, ResendMax: 2, Clock: clock{now}}).Run(ctx)
	if err != nil || rep.Queued != 5 || len(q.sent) != 5 {
		t.Fatalf("report %+v %v, sent %v: want all 5 re-sent", rep, err, q.sent)
	}
}

func TestSweepStopsWithItsContext(t *testing.T) {
	st := memstore.New()
	for i := range 50 {
		key := string(rune('a'+i%26)) + string(rune('a'+i/26))
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, State: job.Queued, MaxAttempts: 1, Budget: 1,
			Deadline: now.Add(time.Hour), Version: 1, CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour)}
		if _, err := st.Create(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := reconciler.New(reconciler.Config{Store: st, Queue: &queue{}, After: time.Minute, Clock: clock{now}})
	rep, err := r.Run(ctx)
	if err != nil || rep.Candidates > 1 {
		t.Fatalf("a cancelled sweep went on: %+v %v", rep, err)
	}
}

// TestDeadLetteredJobsAreMarkedFailed: a job whose message SQS moved to the
// DLQ (maxReceiveCount receives, no outcome recorded) is marked failed
// with class dead_lettered by the next sweep, unless a live worker holds
// it or it finished; its dead letter stays for a replay.
func TestDeadLetteredJobsAreMarkedFailed(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	mk := func(key string, mut func(*job.Job)) string {
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1),
			Deadline: now.Add(time.Hour), Version: 1, CreatedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute)}
		if mut != nil {
			mut(&j)
		}
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	queued := mk("queued", nil)
	deadWorker := mk("dead-worker", func(j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", now.Add(-time.Second)
		j.Reserve, j.Held = 100, 100
	})
	live := mk("live", func(j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", now.Add(time.Minute)
	})
	done := mk("done", func(j *job.Job) { j.State = job.Succeeded })
	// A replay killed between re-sending this job and deleting its dead
	// letter leaves both: the replay answered it, so it is not marked.
	replayed := mk("replayed", func(j *job.Job) { j.Replays, j.ReplayedAt = 1, now.Add(-time.Minute) })
	q := &queue{}
	for _, id := range []string{queued, deadWorker, live, done, replayed, job.NewID("t", "gone")} {
		q.dead = append(q.dead, job.DeadLetter{JobID: id, SentAt: now.Add(-time.Hour)})
	}
	m := &metrics{m: map[string]float64{}}
	rep, err := reconciler.New(reconciler.Config{Store: st, Queue: q, After: 10 * time.Minute, Clock: clock{now}, Metrics: m,
		Retention: job.Retention{Succeeded: time.Hour, Failed: 48 * time.Hour}}).Run(ctx)
	if err != nil || rep.DeadLettered != 2 || rep.Errors != 0 || m.m["DeadLetteredJobs/"] != 2 {
		t.Fatalf("report %+v %v, metrics %v: want 2 jobs marked", rep, err, m.m)
	}
	for _, id := range []string{queued, deadWorker} {
		if j, _ := st.Get(ctx, id); j.State != job.Failed || j.ErrorClass != job.DeadLettered || !j.ExpiresAt.Equal(now.Add(48*time.Hour)) {
			t.Fatalf("job %+v: want failed, dead_lettered, kept as long as failures", j)
		}
	}
	// The dead worker's attempt was written off first: its hold is cost.
	if j, _ := st.Get(ctx, deadWorker); j.Cost != 100 || !j.CostEstimated || j.Held != 0 || j.LeaseOwner != "" {
		t.Fatalf("job %+v: want the dead attempt's hold charged as an estimate", j)
	}
	if j, _ := st.Get(ctx, live); j.State != job.Running {
		t.Fatalf("a job held by a live worker was marked: %+v", j)
	}
	if j, _ := st.Get(ctx, done); j.State != job.Succeeded {
		t.Fatalf("a finished job was marked: %+v", j)
	}
	if j, _ := st.Get(ctx, replayed); j.State != job.Queued {
		t.Fatalf("a job replayed after its dead letter was marked: %+v", j)
	}
}

// lot is a map parking lot.
type lot map[string][]byte

func (l lot) Put(_ context.Context, k string, b []byte) error { l[k] = b; return nil }
func (l lot) Delete(_ context.Context, k string) error        { delete(l, k); return nil }
func (l lot) Get(_ context.Context, k string) ([]byte, error) {
	if b, ok := l[k]; ok {
		return b, nil
	}
	return nil, job.NotFound()
}

// TestADeadLetteredJobsParkedAnswerIsRecorded: the dead worker had parked
// its answer; the sweep records it (exact cost, succeeded) instead of
// writing the attempt off and marking the job failed.
func TestADeadLetteredJobsParkedAnswerIsRecorded(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := job.Job{ID: job.NewID("t", "parked"), Tenant: "t", RequestKey: "parked", State: job.Running, Attempts: 1, MaxAttempts: 3,
		Budget: job.Cents(1), Reserve: 100, Held: 100, LeaseOwner: "w", LeaseUntil: now.Add(-time.Second),
		Deadline: now.Add(time.Hour), Version: 2, CreatedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute)}
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	l := lot{}
	if err := parking.Park(ctx, l, finish.Outcome{Succeed: &job.Succeed{ID: j.ID, Owner: "w", Now: now.Add(-2 * time.Second),
		Settlement: job.Settlement{Cost: 40, Held: 100}, Result: json.RawMessage(`{"output":"hi"}`)}}); err != nil {
		t.Fatal(err)
	}
	q := &queue{dead: []job.DeadLetter{{JobID: j.ID, SentAt: now.Add(-time.Hour)}}}
	if _, err := reconciler.New(reconciler.Config{Store: st, Queue: q, After: 10 * time.Minute, Clock: clock{now}, Parking: l}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Get(ctx, j.ID)
	if got.State != job.Succeeded || got.Cost != 40 || got.CostEstimated || got.Held != 0 || len(l) != 0 {
		t.Fatalf("job %+v (lot %d): want the parked success recorded at its exact cost", got, len(l))
	}
}
