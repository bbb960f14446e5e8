package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Quarantines is the quarantine table in memory, for tests.
type Quarantines struct {
	mu sync.Mutex
	qs map[job.QuarantineKey]job.Quarantine
}

// NewQuarantines returns an empty quarantine store.
func NewQuarantines() *Quarantines { return &Quarantines{qs: map[job.QuarantineKey]job.Quarantine{}} }

// Quarantine puts q, replacing an earlier one of the same key.
func (s *Quarantines) Quarantine(_ context.Context, q job.Quarantine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.qs[q.Key()] = q
	return nil
}

// Quarantined answers k's quarantine if one holds at now.
func (s *Quarantines) Quarantined(_ context.Context, k job.QuarantineKey, now time.Time) (job.Quarantine, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.qs[k]
	return q, ok && q.Holds(now), nil
}

// Lift ends k's quarantine.
func (s *Quarantines) Lift(_ context.Context, k job.QuarantineKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.qs, k)
	return nil
}

// List answers the quarantines in force at now, of tenant or of every
// tenant, newest first.
func (s *Quarantines) List(_ context.Context, tenant string, now time.Time) ([]job.Quarantine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var qs []job.Quarantine
	for _, q := range s.qs {
		if (tenant == "" || q.Tenant == tenant) && q.Holds(now) {
			qs = append(qs, q)
		}
	}
	slices.SortFunc(qs, func(a, b job.Quarantine) int { return b.At.Compare(a.At) })
	return qs, nil
}
