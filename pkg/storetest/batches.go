package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Batches is what every batch records store answers.
type Batches interface {
	OpenBatch(context.Context, job.BatchRecord) error
	Batches(context.Context) ([]job.BatchRecord, error)
	SaveBatch(context.Context, job.BatchRecord) error
}

// RunBatches is the batch record stores' conformance suite: a batch is
// opened once (a second open of its id is a conflict that changes
// nothing), is listed while open with every field as saved, leaves the
// list once saved settled, and a save never opens one; a record keeps
// job.MaxBatchJobs jobs and no more.
func RunBatches(t *testing.T, s Batches) {
	ctx := t.Context()
	at := base
	b1 := job.BatchRecord{ID: "b1", Lane: job.LaneKey("default", 1), Provider: "openai", Model: "gpt-x", State: job.Collecting,
		Jobs: []job.BatchJob{{ID: job.NewID(tenant, "k1"), Held: 7}, {ID: job.NewID(tenant, "k2"), Held: 9}}, CreatedAt: at, UpdatedAt: at}
	b2 := job.BatchRecord{ID: "b2", Lane: job.LaneKey("default", 2), Provider: "anthropic", Model: "claude-x", State: job.Collecting,
		CreatedAt: at.Add(time.Second), UpdatedAt: at.Add(time.Second)}
	for _, b := range []job.BatchRecord{b2, b1} {
		if err := s.OpenBatch(ctx, b); err != nil {
			t.Fatalf("open %s: %v", b.ID, err)
		}
	}
	listed := func(what string, want ...job.BatchRecord) {
		t.Helper()
		got, err := s.Batches(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d batches %+v, want %d %+v", what, len(got), got, len(want), want)
		}
		for i := range want {
			sameBatch(t, fmt.Sprintf("%s: batch %d", what, i), got[i], want[i])
		}
	}
	listed("opened, oldest first", b1, b2)

	again := b1
	again.Model, again.Jobs = "another", nil
	if err := s.OpenBatch(ctx, again); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("a second open of b1: %v, want a conflict", err)
	}
	listed("after a second open", b1, b2)

	submitted := b1
	submitted.State, submitted.ProviderID, submitted.UpdatedAt = job.Submitted, "batch_abc123", at.Add(time.Minute)
	// Below the millisecond, as a clock gives them: read back at the
	// stores' precision.
	submitted.HandBackAt, submitted.SealedAt = at.Add(time.Hour+123*time.Microsecond), at.Add(30*time.Second+456*time.Microsecond)
	submitted.Jobs = submitted.Jobs[1:]
	if err := s.SaveBatch(ctx, submitted); err != nil {
		t.Fatalf("save submitted: %v", err)
	}
	stored := submitted
	stored.HandBackAt, stored.SealedAt = job.Millis(submitted.HandBackAt), job.Millis(submitted.SealedAt)
	listed("submitted", stored, b2)

	settled := stored
	settled.State, settled.UpdatedAt = job.Settled, at.Add(time.Hour)
	if err := s.SaveBatch(ctx, settled); err != nil {
		t.Fatalf("save settled: %v", err)
	}
	listed("settled", b2)
	refusedBatch(t, s, b2, listed)
	if err := s.OpenBatch(ctx, b1); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("an open of a settled batch's id: %v, want a conflict", err)
	}
	listed("a settled batch opened again", b2)

	never := job.BatchRecord{ID: "never", Lane: b1.Lane, State: job.Submitted, CreatedAt: at, UpdatedAt: at}
	if err := s.SaveBatch(ctx, never); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("a save of a batch never opened: %v, want not found", err)
	}
	listed("after a save of a batch never opened", b2)
	t.Run("a record keeps the most jobs it may, no more", func(t *testing.T) { fullBatch(t, s) })
}

// refusedBatch: a batch the provider refused keeps its refusal (class
// and detail) and stays listed while its jobs are handed back; saved
// settled, it leaves the list, and b is listed as it was.
func refusedBatch(t *testing.T, s Batches, b job.BatchRecord, listed func(string, ...job.BatchRecord)) {
	t.Helper()
	ctx := t.Context()
	r := job.BatchRecord{ID: "refused", Lane: b.Lane, Provider: "bedrock", Model: "m", State: job.Refused,
		Jobs: []job.BatchJob{{ID: job.NewID(tenant, "r1"), Held: 3}}, Refusal: job.InvalidRequest,
		RefusalDetail: "ValidationException", SealedAt: base, CreatedAt: base.Add(2 * time.Second), UpdatedAt: base.Add(3 * time.Second)}
	if err := s.OpenBatch(ctx, job.BatchRecord{ID: r.ID, Lane: r.Lane, State: job.Collecting, CreatedAt: r.CreatedAt, UpdatedAt: r.CreatedAt}); err != nil {
		t.Fatalf("open the refused batch: %v", err)
	}
	if err := s.SaveBatch(ctx, r); err != nil {
		t.Fatalf("save refused: %v", err)
	}
	listed("a refused batch, its jobs not yet handed back", b, r)
	r.State, r.UpdatedAt = job.Settled, base.Add(4*time.Second)
	if err := s.SaveBatch(ctx, r); err != nil {
		t.Fatalf("save the refused batch settled: %v", err)
	}
	listed("the refused batch's jobs handed back", b)
}

// fullBatch: a record of job.MaxBatchJobs jobs, each holding the most a
// job's budget allows by default (a hold of 13 significant digits), is
// kept whole; one more job is refused as too large.
func fullBatch(t *testing.T, s Batches) {
	ctx := t.Context()
	full := job.BatchRecord{ID: "full", Lane: job.LaneKey("a-route-name", 3), Provider: "bedrock", Model: "a-model-name",
		State: job.Collecting, CreatedAt: base, UpdatedAt: base}
	for i := range job.MaxBatchJobs {
		full.Jobs = append(full.Jobs, job.BatchJob{ID: job.NewID(tenant, fmt.Sprint("key-", i)), Held: job.Cents(10_000) - 1})
	}
	if err := s.OpenBatch(ctx, full); err != nil {
		t.Fatalf("open a full batch: %v", err)
	}
	over := full
	over.ID, over.Jobs = "over", append(full.Jobs[:len(full.Jobs):len(full.Jobs)], job.BatchJob{ID: job.NewID(tenant, "one-more"), Held: 1})
	if err := s.OpenBatch(ctx, over); job.ErrorCode(err) != job.CodeTooLarge {
		t.Fatalf("open a batch of %d jobs: %v, want too large", len(over.Jobs), err)
	}
	over.ID = full.ID
	if err := s.SaveBatch(ctx, over); job.ErrorCode(err) != job.CodeTooLarge {
		t.Fatalf("save a batch of %d jobs: %v, want too large", len(over.Jobs), err)
	}
	got, err := s.Batches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range got {
		if b.ID == full.ID {
			sameBatch(t, "the full batch", b, full)
			return
		}
	}
	t.Fatalf("the full batch is not listed: %d batches", len(got))
}

// sameBatch reports every field of got that differs from want; times
// compare as instants.
func sameBatch(t *testing.T, what string, got, want job.BatchRecord) {
	t.Helper()
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gv, wv := g.Field(i).Interface(), w.Field(i).Interface()
		switch gt := gv.(type) {
		case time.Time:
			if !gt.Equal(wv.(time.Time)) {
				t.Errorf("%s: %s = %s, want %s", what, name, show(gv), show(wv))
			}
		case []job.BatchJob:
			// Thousands of jobs: the first difference, not the lists.
			wj := wv.([]job.BatchJob)
			if i := firstDiff(gt, wj); i >= 0 {
				t.Errorf("%s: %d jobs, want %d; the first difference at %d", what, len(gt), len(wj), i)
			}
		default:
			if !reflect.DeepEqual(gv, wv) {
				t.Errorf("%s: %s = %s, want %s", what, name, show(gv), show(wv))
			}
		}
	}
}

// firstDiff is the first index where a and b differ (nil and empty are
// alike), -1 when they do not.
func firstDiff(a, b []job.BatchJob) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}
