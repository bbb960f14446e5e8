package job_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestBackoffHoldsOffClaimsAndDuplicatesWait(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := job.Job{State: job.Queued, MaxAttempts: 3, Attempts: 1, Budget: 10, Deadline: now.Add(time.Hour), NotBefore: now.Add(2 * time.Second)}
	if (job.Claim{Owner: "w", Now: now}).Allows(j) {
		t.Fatal("a claim during the backoff was allowed")
	}
	if d := job.WhyRefused(j, now); d.Action != job.Wait || d.Delay != 2*time.Second {
		t.Fatalf("decision = %+v, want Wait 2s", d)
	}
	if !(job.Claim{Owner: "w", Now: now.Add(2 * time.Second)}).Allows(j) {
		t.Fatal("a claim once the backoff ended was refused")
	}
	if got := (job.Claim{Owner: "w", Now: now.Add(3 * time.Second)}).Apply(j); !got.NotBefore.IsZero() {
		t.Fatal("the claim must clear the backoff")
	}
	r := job.Release{Owner: "w", Now: now, NotBefore: now.Add(1500 * time.Millisecond)}
	if got := r.Apply(job.Job{State: job.Running, LeaseOwner: "w"}); !got.NotBefore.Equal(now.Add(1500 * time.Millisecond)) {
		t.Fatalf("release not before = %s", got.NotBefore)
	}
}
