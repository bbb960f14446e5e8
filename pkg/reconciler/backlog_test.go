package reconciler_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/reconciler"
)

// countingStore counts the conditional writes a sweep tries.
type countingStore struct {
	reconciler.Store
	nudges atomic.Int64
}

func (c *countingStore) Nudge(ctx context.Context, n job.Nudge) (job.Job, error) {
	c.nudges.Add(1)
	return c.Store.Nudge(ctx, n)
}

// movingClock is a clock a test moves between sweeps.
type movingClock struct{ t time.Time }

func (c *movingClock) Now() time.Time { return c.t }

// backlogJobs creates n queued jobs, untouched since they were created a
// second apart from created on (the first is the oldest), and returns
// their ids in that order; mut, if not nil, changes job i first.
func backlogJobs(t *testing.T, st *memstore.Store, prefix string, created time.Time, n int, mut func(i int, j *job.Job)) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		key := fmt.Sprint(prefix, i)
		at := created.Add(time.Duration(i) * time.Second)
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1),
			Deadline: at.Add(48 * time.Hour), Version: 1, CreatedAt: at, UpdatedAt: at}
		if mut != nil {
			mut(i, &j)
		}
		if _, err := st.Create(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		ids[i] = j.ID
	}
	return ids
}

// backlogSweeps runs r every five minutes of c (After is ten), at most
// sweeps times or until done says stop, and checks that no sweep examines
// more than examineMax candidates or re-sends more than resendMax queued
// jobs. It returns the sweep (1-based) each job was first re-sent in.
func backlogSweeps(t *testing.T, r *reconciler.Reconciler, st *countingStore, q *queue, c *movingClock, sweeps, examineMax, resendMax int,
	done func(first map[string]int) bool) map[string]int {
	t.Helper()
	first := map[string]int{}
	for sweep := 1; sweep <= sweeps; sweep++ {
		st.nudges.Store(0)
		q.sent = nil
		rep, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := int(st.nudges.Load()); n > examineMax || rep.Examined != n || rep.Queued > resendMax || len(q.sent) > examineMax {
			t.Fatalf("sweep %d: %d conditional writes (report %+v), %d sends: want at most %d writes and %d queued re-sends",
				sweep, n, rep, len(q.sent), examineMax, resendMax)
		}
		for _, id := range q.sent {
			if _, ok := first[id]; !ok {
				first[id] = sweep
			}
		}
		if done(first) {
			break
		}
		c.t = c.t.Add(5 * time.Minute)
	}
	return first
}

// TestALostMessageAmongALargeBacklogIsResentWithinTheBound: 10,000 queued
// jobs older than the horizon and no worker taking any, so each sweep's
// re-sends stay queued (their messages wait in the backlog). Each sweep
// examines at most ExamineMax (1,000) and re-sends the ResendMax (100)
// oldest never nudged, so the lost message with 1,234 never-nudged jobs
// ahead of it is re-sent in sweep floor(1234/100) + 1 = 13, not before,
// though 400 older jobs (H - ResendMax, H the head's 500) are held by
// live workers the whole time and the jobs it nudged pile up ahead of it.
func TestALostMessageAmongALargeBacklogIsResentWithinTheBound(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	old := now.Add(-24 * time.Hour)
	const held, ahead, examineMax, resendMax = 400, 1234, 1000, 100
	backlogJobs(t, st, "held", old, held, func(_ int, j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", now.Add(72*time.Hour)
	})
	ids := backlogJobs(t, st, "q", old.Add(time.Hour), 10000, nil)
	lost := ids[ahead]
	c := &movingClock{now}
	cs := &countingStore{Store: st}
	q := &queue{backlog: 5000}
	r := reconciler.New(reconciler.Config{Store: cs, Queue: q, After: 10 * time.Minute, ResendMax: resendMax, ExamineMax: examineMax,
		Clock: c, Parallel: 4})
	first := backlogSweeps(t, r, cs, q, c, 20, examineMax, resendMax, func(first map[string]int) bool { _, ok := first[lost]; return ok })
	if got, want := first[lost], ahead/resendMax+1; got != want {
		t.Fatalf("the lost message was re-sent in sweep %d, want %d (floor(%d/%d) + 1)", got, want, ahead, resendMax)
	}
	// Oldest first: every job ahead of it was re-sent before it.
	for i, id := range ids[:ahead] {
		if s, ok := first[id]; !ok || s > first[lost] || s != i/resendMax+1 {
			t.Fatalf("job %d of the backlog was first re-sent in sweep %d (%v), want %d", i, s, ok, i/resendMax+1)
		}
	}
}

// deadWorkerBacklog is a backlog of 10,000 queued jobs older than the
// horizon, one running job older still whose worker died, and a young
// running job (never among the oldest) that young changes; and a
// reconciler over them with a budget of 1,000 (a head of 500, the rest
// rotating) whose passes begin at origin.
func deadWorkerBacklog(t *testing.T, young func(j *job.Job), origin func(young string) string) (r *reconciler.Reconciler, st *countingStore,
	q *queue, c *movingClock, oldest, youngID string) {
	t.Helper()
	ms := memstore.New()
	old := now.Add(-24 * time.Hour)
	dead := func(_ int, j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w", j.CreatedAt.Add(time.Minute)
	}
	oldest = backlogJobs(t, ms, "dead-old", old, 1, dead)[0]
	backlogJobs(t, ms, "q", old.Add(time.Hour), 10000, nil)
	youngID = backlogJobs(t, ms, "young", now.Add(-time.Hour), 1, func(i int, j *job.Job) { dead(i, j); young(j) })[0]
	c, st, q = &movingClock{now}, &countingStore{Store: ms}, &queue{backlog: 5000}
	r = reconciler.New(reconciler.Config{Store: st, Queue: q, After: 10 * time.Minute, ResendMax: 100, ExamineMax: 1000, Clock: c, Parallel: 4})
	reconciler.SetOrigin(r, origin(youngID))
	return r, st, q, c, oldest, youngID
}

// onePass is how many sweeps the rotation's pass over deadWorkerBacklog
// takes at most: ceil((10,002 candidates - a head of 500) / 500).
const onePass = (10002 - 500 + 499) / 500

// TestADeadWorkersJobAmongALargeBacklogIsResent: a job whose worker died,
// younger than a backlog of 10,000 queued jobs, is re-sent by the
// rotation within one pass, ceil((candidates - 500) / 500) = 20 sweeps,
// even placed last in it; one among the oldest is re-sent by the first
// sweep.
func TestADeadWorkersJobAmongALargeBacklogIsResent(t *testing.T) {
	t.Parallel()
	r, st, q, c, oldest, young := deadWorkerBacklog(t, func(*job.Job) {}, func(young string) string { return young + "~" }) // just after it: last
	first := backlogSweeps(t, r, st, q, c, onePass+5, 1000, 100, func(first map[string]int) bool { _, ok := first[young]; return ok })
	t.Logf("the dead worker's young job was first re-sent in sweep %d of at most %d", first[young], onePass)
	if first[oldest] != 1 {
		t.Fatalf("the dead worker's job among the oldest was first re-sent in sweep %d, want 1", first[oldest])
	}
	if s, ok := first[young]; !ok || s > onePass {
		t.Fatalf("the dead worker's young job was first re-sent in sweep %d (%v), want by sweep %d", s, ok, onePass)
	}
}

// TestAWorkerThatDiesAfterItsJobWasExaminedIsCaughtByTheNextPass: the
// young job's worker is alive when the first pass examines it (first in
// the pass) and dies later; its lease runs out by sweep 3 and After later,
// from sweep 5, it may be re-sent: the next pass, which begins with it,
// does, within two passes of the sweep it became due in.
func TestAWorkerThatDiesAfterItsJobWasExaminedIsCaughtByTheNextPass(t *testing.T) {
	t.Parallel()
	lease := now.Add(10 * time.Minute) // sweep 3 (sweeps are 5 minutes apart); stale for After by sweep 5
	r, st, q, c, _, young := deadWorkerBacklog(t, func(j *job.Job) { j.UpdatedAt, j.LeaseUntil = now.Add(-time.Minute), lease },
		func(young string) string { return young })
	first := backlogSweeps(t, r, st, q, c, 5+2*onePass, 1000, 100, func(first map[string]int) bool { _, ok := first[young]; return ok })
	t.Logf("the young job, due from sweep 5, was first re-sent in sweep %d", first[young])
	if s, ok := first[young]; !ok || s < 5 || s > 5+2*onePass {
		t.Fatalf("the young job was first re-sent in sweep %d (%v), want between sweep 5 and %d", s, ok, 5+2*onePass)
	}
}

// TestWithoutABacklogASweepResendsAtMostExamineMax: with the queue empty
// every stale queued job lost its message, but one sweep still tries at
// most ExamineMax of them: the 500 oldest and 500 of the rest.
func TestWithoutABacklogASweepResendsAtMostExamineMax(t *testing.T) {
	st := memstore.New()
	ids := backlogJobs(t, st, "q", now.Add(-24*time.Hour), 5000, nil)
	cs := &countingStore{Store: st}
	q := &queue{}
	rep, err := reconciler.New(reconciler.Config{Store: cs, Queue: q, After: 10 * time.Minute, ExamineMax: 1000, Clock: clock{now}}).Run(context.Background())
	if err != nil || rep.Candidates != 5000 || rep.Examined != 1000 || rep.Queued != 1000 || cs.nudges.Load() != 1000 || len(q.sent) != 1000 {
		t.Fatalf("report %+v %v, %d writes, %d sent: want 1,000 of 5,000 re-sent", rep, err, cs.nudges.Load(), len(q.sent))
	}
	for _, id := range ids[:500] {
		if !slices.Contains(q.sent, id) {
			t.Fatalf("%s, among the 500 oldest, was not re-sent", id)
		}
	}
}
