package job_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// Both stores answer with these, and the worker, the API and the
// reconciler branch on their codes and on the record a conflict carries.
func TestStoreErrors(t *testing.T) {
	j := job.Job{ID: "j1", State: job.Running, Version: 7}
	err := job.Conflict(j)
	j.Version = 8 // the caller's copy moves on; the error keeps what the store saw
	if got, ok := job.ConflictJob(err); !ok || got.ID != "j1" || got.Version != 7 {
		t.Fatalf("ConflictJob = %+v %v, want the record at version 7", got, ok)
	}
	if code := job.ErrorCode(err); code != job.CodeConflict {
		t.Fatalf("conflict code %q", code)
	}
	nf := job.NotFound()
	if code := job.ErrorCode(nf); code != job.CodeNotFound {
		t.Fatalf("not found code %q", code)
	}
	if _, ok := job.ConflictJob(nf); ok {
		t.Fatal("a not found carries a record")
	}
}
