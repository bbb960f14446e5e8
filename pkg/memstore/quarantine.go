package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Quarantines is the quarantine table in memory, for tests.
type Quarantines struct {
	t table[job.QuarantineKey, job.Quarantine]
}

// NewQuarantines returns an empty quarantine store.
func NewQuarantines() *Quarantines { return &Quarantines{} }

// Quarantine puts q, replacing an earlier one of the same key.
func (s *Quarantines) Quarantine(_ context.Context, q job.Quarantine) error {
	s.t.put(q.Key(), q)
	return nil
}

// Quarantined answers k's quarantine if one holds at now.
func (s *Quarantines) Quarantined(_ context.Context, k job.QuarantineKey, now time.Time) (job.Quarantine, bool, error) {
	q, ok := s.t.get(k)
	return q, ok && q.Holds(now), nil
}

// Lift ends k's quarantine.
func (s *Quarantines) Lift(_ context.Context, k job.QuarantineKey) error {
	s.t.remove(k)
	return nil
}

// List answers the quarantines in force at now, of tenant or of every
// tenant, newest first.
func (s *Quarantines) List(_ context.Context, tenant string, now time.Time) ([]job.Quarantine, error) {
	qs := s.t.values(func(q job.Quarantine) bool { return (tenant == "" || q.Tenant == tenant) && q.Holds(now) })
	slices.SortFunc(qs, func(a, b job.Quarantine) int { return b.At.Compare(a.At) })
	return qs, nil
}
