package memstore

import (
	"context"
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
)

// Buckets are the providers' rate-limit buckets in memory, for tests and
// the single-process worker pools of benchmarks.
type Buckets struct {
	mu sync.Mutex
	bs map[string]job.Bucket
}

// NewBuckets returns full buckets.
func NewBuckets() *Buckets { return &Buckets{bs: map[string]job.Bucket{}} }

// Take applies t when the bucket allows it, else answers the wait.
func (s *Buckets) Take(_ context.Context, t job.Take) (job.Taken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bs[t.Provider]
	if w := t.Wait(b); w > 0 {
		return job.Taken{Wait: w}, nil
	}
	b.Provider = t.Provider
	s.bs[t.Provider] = t.Apply(b)
	return job.Taken{OK: true, Limit: t.On(b).Limit}, nil
}

// Give returns over-taken tokens.
func (s *Buckets) Give(_ context.Context, g job.Give) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bs[g.Provider]; ok {
		s.bs[g.Provider] = g.Apply(b)
	}
	return nil
}

// Raise applies r.
func (s *Buckets) Raise(_ context.Context, r job.Raise) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bs[r.Provider]
	b.Provider = r.Provider
	s.bs[r.Provider] = r.Apply(b)
	return nil
}

// Learn applies l.
func (s *Buckets) Learn(_ context.Context, l job.Learn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bs[l.Provider]
	b.Provider = l.Provider
	if b, changed := l.Apply(b); changed {
		s.bs[l.Provider] = b
	}
	return nil
}

// Bucket answers a provider's bucket as it stands.
func (s *Buckets) Bucket(_ context.Context, provider string) (job.Bucket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bs[provider]
	b.Provider = provider
	return b, nil
}
