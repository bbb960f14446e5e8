package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Batches are the collectors' batch records in memory, for tests: the
// same contract as the DynamoDB store's (the batch conformance suite).
type Batches struct {
	t table[string, job.BatchRecord] // settled ones too: an id is never reused
}

// NewBatches returns no batches.
func NewBatches() *Batches { return &Batches{} }

// OpenBatch keeps r unless a batch with its id exists (job.CodeConflict).
func (s *Batches) OpenBatch(_ context.Context, r job.BatchRecord) error {
	if err := checkBatch(r); err != nil {
		return err
	}
	if !s.t.putIf(r.ID, cloneBatch(r), false) {
		return &job.Error{Code: job.CodeConflict, Message: "a batch with this id exists"}
	}
	return nil
}

// SaveBatch overwrites the record of a batch opened before
// (job.CodeNotFound for one never opened).
func (s *Batches) SaveBatch(_ context.Context, r job.BatchRecord) error {
	if err := checkBatch(r); err != nil {
		return err
	}
	if !s.t.putIf(r.ID, cloneBatch(r), true) {
		return &job.Error{Code: job.CodeNotFound, Message: "no batch with this id was opened"}
	}
	return nil
}

// Batches answers every open batch record (State not Settled), oldest
// first (ties by id).
func (s *Batches) Batches(context.Context) ([]job.BatchRecord, error) {
	rs := s.t.values(func(r job.BatchRecord) bool { return r.State != job.Settled })
	for i := range rs {
		rs[i] = cloneBatch(rs[i]) // a kept record's jobs are never changed in place
	}
	slices.SortFunc(rs, func(x, y job.BatchRecord) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), strings.Compare(x.ID, y.ID))
	})
	return rs, nil
}

// checkBatch refuses what DynamoDB's store refuses before writing: a
// record with no id, or with more jobs than a record keeps.
func checkBatch(r job.BatchRecord) error {
	if r.ID == "" {
		return &job.Error{Code: job.CodeInvalidRequest, Field: "id", Message: "a batch record needs an id"}
	}
	if len(r.Jobs) > job.MaxBatchJobs {
		return &job.Error{Code: job.CodeTooLarge, Message: "the batch record holds more jobs than a record keeps"}
	}
	return nil
}

// cloneBatch is r with its own jobs, so neither the caller nor a reader
// can change a kept record, and its times at the store's precision.
func cloneBatch(r job.BatchRecord) job.BatchRecord {
	r.Jobs = slices.Clone(r.Jobs)
	r.CreatedAt, r.UpdatedAt = job.Millis(r.CreatedAt), job.Millis(r.UpdatedAt)
	for _, t := range []*time.Time{&r.HandBackAt, &r.SealedAt} {
		if !t.IsZero() { // absent, as a record without them reads back
			*t = job.Millis(*t)
		}
	}
	return r
}
