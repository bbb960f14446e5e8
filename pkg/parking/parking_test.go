package parking_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/parking"
)

// lot is a map lot; err, when set, answers every call.
type lot struct {
	objects map[string][]byte
	err     error
}

func (l *lot) Put(_ context.Context, k string, b []byte) error {
	if l.err != nil {
		return l.err
	}
	l.objects[k] = b
	return nil
}

func (l *lot) Get(_ context.Context, k string) ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	b, ok := l.objects[k]
	if !ok {
		return nil, job.NotFound()
	}
	return b, nil
}

func (l *lot) Delete(_ context.Context, k string) error { delete(l.objects, k); return nil }

var keys int

var now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// dead creates a job whose attempt by "dead" holds 100 and whose lease
// ended at until.
func dead(t *testing.T, s *memstore.Store, until time.Time) job.Job {
	t.Helper()
	return deadAs(t, s, until, func(*job.Job) {})
}

// deadAs is dead, the job changed by change before it is created.
func deadAs(t *testing.T, s *memstore.Store, until time.Time, change func(*job.Job)) job.Job {
	keys++
	t.Helper()
	j := job.Job{ID: job.NewID("t1", fmt.Sprint(t.Name(), keys)), Tenant: "t1", Model: "default", Input: []byte(`{}`), State: job.Running,
		Attempts: 1, MaxAttempts: 3, Budget: job.Cents(1), Reserve: 100, Held: 100, LeaseOwner: "dead", LeaseUntil: until,
		Deadline: now.Add(time.Hour), Version: 2, CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Minute)}
	change(&j)
	if _, err := s.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

func TestSettleRecordsAParkedOutcome(t *testing.T) {
	s, l := memstore.New(), &lot{objects: map[string][]byte{}}
	j := dead(t, s, now.Add(-time.Second))
	o := finish.Outcome{Succeed: &job.Succeed{ID: j.ID, Owner: "dead", Now: now.Add(-2 * time.Second), Settlement: job.Settlement{Cost: 40, Held: 100}, Result: []byte(`{"output":"hi"}`)}}
	if err := parking.Park(t.Context(), l, o); err != nil {
		t.Fatal(err)
	}
	how, got, err := parking.Recover(t.Context(), s, l, parking.Dead{Job: j, Now: now})
	if err != nil || how != parking.Unparked {
		t.Fatalf("settle: %v %v", how, err)
	}
	if got.State != job.Succeeded || got.Cost != 40 || got.CostEstimated || got.Held != 0 || string(got.Result) != `{"output":"hi"}` {
		t.Fatalf("job = %+v, want the parked success at its exact cost", got)
	}
	if len(l.objects) != 0 {
		t.Fatal("the parked outcome stayed in the lot once recorded")
	}
}

func TestSettleWritesOffWhatWasNotParked(t *testing.T) {
	s := memstore.New()
	for name, l := range map[string]parking.Lot{"no lot": nil, "an empty lot": &lot{objects: map[string][]byte{}}} {
		t.Run(name, func(t *testing.T) {
			j := dead(t, s, now.Add(-time.Second))
			how, got, err := parking.Recover(t.Context(), s, l, parking.Dead{Job: j, Now: now})
			if err != nil || how != parking.WrittenOff || got.Cost != 100 || !got.CostEstimated || got.State != job.Queued {
				t.Fatalf("settle: %v %+v %v, want written off", how, got, err)
			}
		})
	}
	t.Run("another attempt's outcome", func(t *testing.T) {
		j := dead(t, s, now.Add(-time.Second))
		l := &lot{objects: map[string][]byte{}}
		_ = parking.Park(t.Context(), l, finish.Outcome{Succeed: &job.Succeed{ID: "j_other", Owner: "dead", Settlement: job.Settlement{Cost: 1}}})
		l.objects[parking.Key(j.ID, "dead")] = l.objects[parking.Key("j_other", "dead")]
		if how, got, err := parking.Recover(t.Context(), s, l, parking.Dead{Job: j, Now: now}); err != nil || how != parking.WrittenOff || got.Cost != 100 {
			t.Fatalf("settle: %v %+v %v, want written off", how, got, err)
		}
	})
}

// TestALotThatCannotBeReadDelaysTheWriteOff: within Patience of the
// lease's end the attempt is left as it is (a parked answer may be in
// the lot); past it, the job goes on.
func TestALotThatCannotBeReadDelaysTheWriteOff(t *testing.T) {
	s, l := memstore.New(), &lot{err: &job.Error{Code: job.CodeUnavailable}}
	j := dead(t, s, now.Add(-time.Second))
	if _, _, err := parking.Recover(t.Context(), s, l, parking.Dead{Job: j, Now: now}); job.ErrorCode(err) != job.CodeUnavailable {
		t.Fatalf("settle: %v, want the lot's error", err)
	}
	if cur, _ := s.Get(t.Context(), j.ID); cur.Held != 100 || cur.Version != j.Version {
		t.Fatalf("record changed: %+v", cur)
	}
	k := dead(t, s, now.Add(-parking.Patience))
	if how, got, err := parking.Recover(t.Context(), s, l, parking.Dead{Job: k, Now: now}); err != nil || how != parking.WrittenOff || got.Cost != 100 {
		t.Fatalf("settle past patience: %v %+v %v, want written off", how, got, err)
	}
}

// TestAParkedOutcomeOfACancelledJobKeepsItsCost: the job was cancelled
// while its attempt's outcome waited in the lot: the outcome is refused,
// its exact cost added and its lease removed.
func TestAParkedOutcomeOfACancelledJobKeepsItsCost(t *testing.T) {
	s, l := memstore.New(), &lot{objects: map[string][]byte{}}
	j := dead(t, s, now.Add(-time.Second))
	c, err := s.Cancel(t.Context(), job.Cancel{ID: j.ID, Tenant: "t1", Now: now.Add(-500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	_ = parking.Park(t.Context(), l, finish.Outcome{Release: &job.Release{ID: j.ID, Owner: "dead", Settlement: job.Settlement{Cost: 40, Held: 100}, Class: job.Timeout}})
	how, _, err := parking.Recover(t.Context(), s, l, parking.Dead{Job: c, Now: now})
	cur, _ := job.ConflictJob(err)
	if how != parking.Unparked || job.ErrorCode(err) != job.CodeConflict || cur.State != job.Abandoned || cur.Cost != 40 || cur.Held != 0 || cur.LeaseOwner != "" {
		t.Fatalf("settle: %v %+v %v", how, cur, err)
	}
}

// A job that waited in the batch lane and no collector took made no call
// and was billed nothing: its dead lease is settled by returning its
// hold, not by charging it as an estimate. Once collected into a batch
// (the provider may be generating), it is written off as any attempt.
func TestAnUncollectedJobsHoldIsReturnedNotCharged(t *testing.T) {
	s := memstore.New()
	waiting := deadAs(t, s, now.Add(-time.Second), func(j *job.Job) {
		j.LeaseOwner, j.Enlisted, j.EnlistedAt = job.BatchOwner("w_1"), "default#0", now.Add(-time.Hour)
	})
	how, got, err := parking.Recover(t.Context(), s, nil, parking.Dead{Job: waiting, Now: now})
	if err != nil || how != parking.Returned || got.State != job.Queued || got.Cost != 0 || got.CostEstimated || got.Held != 0 ||
		got.LeaseOwner != "" || got.Enlisted != "" || got.ErrorDetail != parking.UncollectedDetail {
		t.Fatalf("uncollected: %v %+v %v, want queued with its hold returned", how, got, err)
	}
	collected := deadAs(t, s, now.Add(-time.Second), func(j *job.Job) { j.LeaseOwner, j.Batch = job.BatchOwner("b_1"), "b_1" })
	if how, got, err := parking.Recover(t.Context(), s, nil, parking.Dead{Job: collected, Now: now}); err != nil || how != parking.WrittenOff || got.Cost != 100 || !got.CostEstimated {
		t.Fatalf("collected: %v %+v %v, want written off", how, got, err)
	}
}
