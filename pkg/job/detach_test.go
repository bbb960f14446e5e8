package job_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// A detached job's message waits for its reattach, then reattaches it, even
// past its lease's end (the reattach message was lost and the reconciler
// sent another): a detached attempt is reattached, never written off.
func TestADetachedJobIsReattachedWhenDue(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := job.Job{State: job.Running, Attempts: 1, MaxAttempts: 3, LeaseOwner: "me", LeaseUntil: t0.Add(time.Minute), Deadline: t0.Add(time.Hour),
		Pending: &job.Pending{Owner: "me", ID: "resp_1", Due: t0.Add(10 * time.Second)}}
	for _, tt := range []struct {
		name string
		at   time.Time
		want job.Decision
	}{
		{"before it is due", t0, job.Decision{Action: job.Wait, Delay: 10 * time.Second}},
		{"due", t0.Add(10 * time.Second), job.Decision{Action: job.ReattachDue}},
		{"past its lease", t0.Add(2 * time.Minute), job.Decision{Action: job.ReattachDue}},
	} {
		if got := job.WhyRefused(j, tt.at); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// Reattached, it is attached again: its new owner's lease rules.
	c := job.NewReattach(j, "next", t0.Add(10*time.Second), t0.Add(time.Minute))
	if !c.Allows(j) {
		t.Fatal("a due reattach is refused")
	}
	got := c.Apply(j)
	if got.Detached() || got.Pending.Owner != "next" || got.Attempts != 1 || c.Allows(got) {
		t.Fatalf("after the reattach: %+v, want attached to next, one attempt, a second reattach refused", got)
	}
	if d := job.WhyRefused(got, t0.Add(11*time.Second)); d.Action != job.Wait {
		t.Fatalf("a reattached job's message: %+v, want to wait for the new owner's lease", d)
	}
}
