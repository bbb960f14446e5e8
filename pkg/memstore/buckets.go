package memstore

import (
	"context"

	"github.com/aijobs/aijobs/pkg/job"
)

// Buckets are the providers' rate-limit buckets in memory, for tests and
// the single-process worker pools of benchmarks.
type Buckets struct {
	t table[string, job.Bucket]
}

// NewBuckets returns full buckets.
func NewBuckets() *Buckets { return &Buckets{} }

// Take applies t when the bucket allows it, else answers the wait.
func (s *Buckets) Take(_ context.Context, t job.Take) (job.Taken, error) {
	var taken job.Taken
	s.t.change(t.Provider, func(b job.Bucket, _ bool) (job.Bucket, bool) {
		if w := t.Wait(b); w > 0 {
			taken = job.Taken{Wait: w}
			return b, false
		}
		b.Provider = t.Provider
		taken = job.Taken{OK: true, Limit: t.On(b).Limit}
		return t.Apply(b), true
	})
	return taken, nil
}

// Give returns over-taken tokens; a bucket never taken from has none.
func (s *Buckets) Give(_ context.Context, g job.Give) error {
	s.t.change(g.Provider, func(b job.Bucket, ok bool) (job.Bucket, bool) { return g.Apply(b), ok })
	return nil
}

// Raise applies r.
func (s *Buckets) Raise(_ context.Context, r job.Raise) error {
	s.t.change(r.Provider, func(b job.Bucket, _ bool) (job.Bucket, bool) {
		b.Provider = r.Provider
		return r.Apply(b), true
	})
	return nil
}

// Learn applies l.
func (s *Buckets) Learn(_ context.Context, l job.Learn) error {
	s.t.change(l.Provider, func(b job.Bucket, _ bool) (job.Bucket, bool) {
		b.Provider = l.Provider
		return l.Apply(b)
	})
	return nil
}

// Bucket answers a provider's bucket as it stands.
func (s *Buckets) Bucket(_ context.Context, provider string) (job.Bucket, error) {
	b, _ := s.t.get(provider)
	b.Provider = provider
	return b, nil
}
