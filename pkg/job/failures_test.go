package job_test

import (
	"reflect"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestSummarizeFailures(t *testing.T) {
	fs := []job.Failure{
		{ID: "1", InputHash: "sha256:a", Class: job.Overloaded, Cost: 10, Saved: 10},
		{ID: "2", InputHash: "sha256:a", Class: job.Overloaded, Cost: 15, Saved: 3},
		{ID: "3", InputHash: "sha256:a", Class: job.ContextLengthExceeded, Cost: 5},
		{ID: "4", InputHash: "sha256:b", Class: job.ContentFiltered, Cost: 30, Saved: 1},
		{ID: "5", InputHash: "sha256:c", Class: job.DeadlineExceeded, Cost: 0},
	}
	got := job.SummarizeFailures(fs)
	want := job.FailureReport{
		Jobs: 5, Cost: 60, Saved: 14,
		ByClass: []job.Total{
			{Key: "content_filtered", Jobs: 1, Cost: 30, Saved: 1},
			{Key: "overloaded", Jobs: 2, Cost: 25, Saved: 13},
			{Key: "context_length_exceeded", Jobs: 1, Cost: 5},
			{Key: "deadline_exceeded", Jobs: 1, Cost: 0},
		},
		ByInput: []job.Total{
			{Key: "sha256:a", Jobs: 3, Cost: 30, Saved: 13, Classes: []job.ErrorClass{job.ContextLengthExceeded, job.Overloaded}},
			{Key: "sha256:b", Jobs: 1, Cost: 30, Saved: 1, Classes: []job.ErrorClass{job.ContentFiltered}},
			{Key: "sha256:c", Jobs: 1, Cost: 0, Classes: []job.ErrorClass{job.DeadlineExceeded}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if empty := job.SummarizeFailures(nil); empty.Jobs != 0 || len(empty.ByClass) != 0 || empty.ByClass == nil {
		t.Fatalf("empty report %+v: want zero totals and empty (not null) lists", empty)
	}
}
