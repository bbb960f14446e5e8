package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Quarantines is what every quarantine store answers.
type Quarantines interface {
	Quarantine(context.Context, job.Quarantine) error
	Quarantined(context.Context, job.QuarantineKey, time.Time) (job.Quarantine, bool, error)
	Lift(context.Context, job.QuarantineKey) error
	List(ctx context.Context, tenant string, now time.Time) ([]job.Quarantine, error)
}

// RunQuarantines is the quarantine stores' conformance suite: a
// quarantine holds until its time, the newest failure replaces an older
// one, a list shows one tenant's or every tenant's in force, newest first,
// and a lift ends one (a second lift is no error).
func RunQuarantines(t *testing.T, s Quarantines) {
	ctx := t.Context()
	at := base
	q := func(tenant, model, hash, id string, age time.Duration) job.Quarantine {
		return job.Quarantine{Tenant: tenant, Model: model, InputHash: hash, Class: job.ContextLengthExceeded, JobID: id,
			At: at.Add(-age), Until: at.Add(-age).Add(time.Hour)}
	}
	a1 := q("tenant-a", "default", "sha256:aa", "job_a1", 10*time.Minute)
	a2 := q("tenant-a", "long-context", "sha256:aa", "job_a2", 5*time.Minute) // same input, another route
	b1 := q("tenant-b", "default", "sha256:aa", "job_b1", 2*time.Hour)        // lifted by itself already
	for _, x := range []job.Quarantine{a1, a2, b1} {
		if err := s.Quarantine(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := s.Quarantined(ctx, a1.Key(), at); err != nil || !ok || got != a1 {
		t.Fatalf("quarantined %v %v %v, want %+v", got, ok, err, a1)
	}
	if _, ok, err := s.Quarantined(ctx, b1.Key(), at); err != nil || ok {
		t.Fatalf("an expired quarantine still holds: %v %v", ok, err)
	}
	if _, ok, err := s.Quarantined(ctx, job.QuarantineKey{Tenant: "tenant-c", Model: "default", InputHash: "sha256:aa"}, at); err != nil || ok {
		t.Fatalf("another tenant's input is quarantined: %v %v", ok, err)
	}
	newer := a1
	newer.JobID, newer.Class, newer.At, newer.Until = "job_a3", job.ContentFiltered, at, at.Add(time.Hour)
	if err := s.Quarantine(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Quarantined(ctx, a1.Key(), at); got != newer {
		t.Fatalf("the newest failure did not replace the older: %+v", got)
	}
	list := func(tenant string) []string {
		qs, err := s.List(ctx, tenant, at)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range qs {
			ids = append(ids, x.JobID)
		}
		return ids
	}
	if got := list("tenant-a"); len(got) != 2 || got[0] != "job_a3" || got[1] != "job_a2" {
		t.Fatalf("tenant-a's list %v, want [job_a3 job_a2]", got)
	}
	if got := list(""); len(got) != 2 {
		t.Fatalf("every tenant's list %v: want the two in force", got)
	}
	for range 2 {
		if err := s.Lift(ctx, a2.Key()); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.Quarantined(ctx, a2.Key(), at); ok {
		t.Fatal("a lifted quarantine still holds")
	}
	if got := list("tenant-a"); len(got) != 1 || got[0] != "job_a3" {
		t.Fatalf("after the lift: %v", got)
	}
}
