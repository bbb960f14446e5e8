package job_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestWebhookKeysRotateWithAnOverlap(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	k := job.FirstWebhookKeys("t")
	if got := k.InUse(t0); !slices.Equal(got, []int{1}) {
		t.Fatalf("before any rotation: %v", got)
	}
	if got := (job.WebhookKeys{Tenant: "t"}).InUse(t0); !slices.Equal(got, []int{1}) {
		t.Fatalf("a tenant with no record: %v, want version 1", got)
	}
	r := k.Rotate(t0)
	if got := r.InUse(t0.Add(time.Hour)); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("during the overlap: %v, want [2 1]", got)
	}
	if got := r.InUse(t0.Add(job.KeyOverlap)); !slices.Equal(got, []int{2}) {
		t.Fatalf("after the overlap: %v, want [2]", got)
	}
	if got := r.Rotate(t0.Add(time.Minute)); got.Current != 3 || got.Previous != 2 {
		t.Fatalf("a second rotation = %+v", got)
	}
}

func TestARotationNamesTheVersionItReplaces(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	k := job.FirstWebhookKeys("t")
	next, applied, err := k.RotateFrom(1, t0)
	if err != nil || !applied || next.Current != 2 {
		t.Fatalf("rotate from the current version: %+v %v %v", next, applied, err)
	}
	again, applied, err := next.RotateFrom(1, t0.Add(time.Second))
	if err != nil || applied || again != next {
		t.Fatalf("a retry of that rotation rotates again: %+v %v %v", again, applied, err)
	}
	if _, _, err := next.Rotate(t0).RotateFrom(1, t0); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("a rotation from a version two behind: err = %v, want conflict", err)
	}
	if _, _, err := k.RotateFrom(2, t0); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("a rotation from a version not reached: err = %v, want conflict", err)
	}
}
