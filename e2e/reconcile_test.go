package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestReconcilerFinishesAJobWhoseMessageWasNeverSent: a record whose
// SendMessage never happened (the API crashed between the put and the
// send, and the client never retried) is found by the reconciler's sweep,
// re-sent through the claim path and finished, once.
func TestReconcilerFinishesAJobWhoseMessageWasNeverSent(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := context.Background()
	old := job.Millis(time.Now().Add(-20 * time.Minute)) // untouched for longer than AIJOBS_RECONCILE_AFTER (10m)
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: "lost message"}}, MaxTokens: 20})
	lost := job.Job{ID: job.NewID("jwt:t", "lost"), Tenant: "jwt:t", RequestKey: "lost", InputHash: "sha256:lost", Model: "default",
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
