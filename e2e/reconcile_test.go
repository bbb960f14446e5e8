package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/reconciler"
	"github.com/aijobs/aijobs/pkg/replay"
)

// TestReconcilerFinishesAJobWhoseMessageWasNeverSent: a record whose
// SendMessage never happened (the API crashed between the put and the
// send, and the client never retried) is found by the reconciler's sweep,
// re-sent through the claim path and finished, once.
func TestReconcilerFinishesAJobWhoseMessageWasNeverSent(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	ctx := context.Background()
	old := job.Millis(time.Now().Add(-20 * time.Minute)) // untouched for longer than AIJOBS_RECONCILE_AFTER (10m)
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: "lost message"}}, MaxTokens: 20})
	lost := job.Job{ID: job.NewID("jwt:t", "lost"), Tenant: "jwt:t", RequestKey: "lost", InputHash: seededHash(t, in), Model: "default",
		Input: in, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: old.Add(time.Hour),
		Version: 1, CreatedAt: old, UpdatedAt: old}
	if _, err := s.app.Store.Create(ctx, lost); err != nil {
		t.Fatal(err)
	}
	// A healthy job created as long ago but touched since: never re-sent.
	busy := lost
	busy.ID, busy.RequestKey, busy.UpdatedAt = job.NewID("jwt:t", "busy"), "busy", job.Millis(time.Now())
	if _, err := s.app.Store.Create(ctx, busy); err != nil {
		t.Fatal(err)
	}

	time.Sleep(300 * time.Millisecond)
	if s.fake.Calls(lost.ID) != 0 {
		t.Fatal("the lost job ran without a message")
	}
	rep, err := s.app.Reconciler.Run(ctx)
	if err != nil || rep.Candidates != 2 || rep.Queued != 1 || rep.Healthy != 1 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	v := s.wait("t", lost.ID, 10*time.Second, "succeeded")
	if num(v, "attempts") != "1" || s.fake.Generations(lost.ID) != 1 {
		t.Fatalf("view %v, generations %d", v, s.fake.Generations(lost.ID))
	}
	if s.fake.Calls(busy.ID) != 0 {
		t.Fatal("the healthy job was re-sent")
	}
	// A second sweep finds nothing to do: the finished job left the
	// active index, the healthy one is still fresh.
	if rep, err := s.app.Reconciler.Run(ctx); err != nil || rep.Queued+rep.Running != 0 || rep.Candidates != 1 {
		t.Fatalf("second sweep: %+v %v", rep, err)
	}
}

// TestADeadLetteredJobIsMarkedAndComesBackByReplay: a message SQS moved to
// the DLQ by redrive (received maxReceiveCount times, no outcome recorded)
// leaves a record no worker will come back to. The reconciler's next sweep
// marks it failed with class dead_lettered, so its polling client and the
// failure index see it; a replay from the DLQ then brings it back through
// the claim path, and it succeeds with one generation.
func TestADeadLetteredJobIsMarkedAndComesBackByReplay(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := context.Background()
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: "crash looped"}}, MaxTokens: 20})
	now := job.Millis(time.Now())
	stuck := job.Job{ID: job.NewID("jwt:t", "dead"), Tenant: "jwt:t", RequestKey: "dead", InputHash: seededHash(t, in), Model: "default",
		Input: in, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: now.Add(time.Hour),
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if _, err := s.app.Store.Create(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	s.sendDead(`{"job_id":"` + stuck.ID + `"}`) // as redrive leaves it

	sweep := reconciler.New(reconciler.Config{Store: s.app.Store, Queue: s.app.Queue, After: s.app.Config.Settings.ReconcileAfter,
		Retention: s.app.Config.Settings.Retention, DeadLetterHide: time.Second})
	rep, err := sweep.Run(ctx)
	if err != nil || rep.DeadLettered != 1 {
		t.Fatalf("sweep: %+v %v, want the job marked", rep, err)
	}
	v := s.wait("t", stuck.ID, 5*time.Second, "failed")
	if v["error_class"] != "dead_lettered" {
		t.Fatalf("view %v: want failed with class dead_lettered", v)
	}
	// A second sweep finds the dead letter again (it stays for the replay)
	// but has nothing left to mark.
	time.Sleep(1100 * time.Millisecond) // the first sweep hid it for a second
	if rep, err := sweep.Run(ctx); err != nil || rep.DeadLettered != 0 || rep.Errors != 0 {
		t.Fatalf("second sweep: %+v %v", rep, err)
	}

	time.Sleep(1100 * time.Millisecond)
	r := replay.New(replay.Config{Store: s.app.Store, Queue: s.app.Queue, DeadLetters: s.app.Queue.DeadLetters(),
		Retention: s.app.Config.Settings.Retention, Limits: s.app.Config.Settings.Limits})
	sum, err := r.DeadLetters(ctx, 0, replay.Options{Attempts: 1, Parallel: 1})
	if err != nil || sum[replay.Replayed] != 1 {
		t.Fatalf("replay from the DLQ: %v %v, want the job replayed", sum, err)
	}
	s.wait("t", stuck.ID, 10*time.Second, "succeeded")
	if s.fake.Generations(stuck.ID) != 1 {
		t.Fatalf("%d generations, want 1", s.fake.Generations(stuck.ID))
	}
}
