package memstore

import (
	"context"
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
)

// Buckets are the providers' rate-limit buckets in memory, for tests and
// the single-process worker pools of benchmarks. A key's bucket is split
// into parts as the buckets table's is (job.RateLimit.Parts), so the
// conformance suite holds both to the same answers; a key's learned limit
// is on its own item (part 0), which every take reads.
type Buckets struct {
	t  table[string, job.Bucket]
	mu sync.Mutex
	// parts is how many parts each key was last taken at: a raise reaches
	// them all.
	parts map[string]int
}

// NewBuckets returns full buckets.
func NewBuckets() *Buckets { return &Buckets{parts: map[string]int{}} }

// Take applies t to a part of its key's bucket when one allows it, else
// answers the shortest wait of the parts it tried (job.PartTries; a
// short wait is answered at once, job.PartWait).
func (s *Buckets) Take(_ context.Context, t job.Take) (job.Taken, error) {
	own, _ := s.t.get(t.Provider)
	n := t.On(own).Limit.Parts(job.PartRequests)
	s.mu.Lock()
	s.parts[t.Provider] = n
	s.mu.Unlock()
	var wait job.Taken
	for _, part := range job.PartOrder(n) {
		var taken job.Taken
		s.t.change(job.PartKey(t.Provider, part), func(b job.Bucket, _ bool) (job.Bucket, bool) {
			kept := b.Learned // the key's own item's, which a learn may have moved since
			b.Learned = own.Learned
			pt := t.In(b, n)
			if w := pt.Wait(b); w > 0 {
				taken = job.Taken{Wait: w}
				return b, false
			}
			taken = job.Taken{OK: true, Limit: t.On(b).Limit, Part: part}
			after := pt.Apply(b)
			after.Provider, after.Learned = job.PartKey(t.Provider, part), kept
			return after, true
		})
		if taken.OK {
			return taken, nil
		}
		if wait.Wait == 0 || taken.Wait < wait.Wait {
			wait = taken
		}
		if taken.Wait <= job.PartWait {
			break
		}
	}
	return wait, nil
}

// Give returns over-taken tokens to the part they came from; a part never
// taken from has none.
func (s *Buckets) Give(_ context.Context, g job.Give) error {
	g.Limit = g.Limit.Part(g.Limit.Parts(job.PartRequests))
	s.t.change(job.PartKey(g.Provider, g.Part), func(b job.Bucket, ok bool) (job.Bucket, bool) { return g.Apply(b), ok })
	return nil
}

// Raise applies r to its part, or to every part of its key (those of its
// last take, else of its learned limit) for a pause.
func (s *Buckets) Raise(_ context.Context, r job.Raise) error {
	if !r.EveryPart {
		key := job.PartKey(r.Provider, r.Part)
		s.t.change(key, func(b job.Bucket, _ bool) (job.Bucket, bool) {
			b.Provider = key
			return r.Apply(b), true
		})
		return nil
	}
	own, _ := s.t.get(r.Provider)
	s.mu.Lock()
	n, ok := s.parts[r.Provider]
	if !ok {
		n = own.Learned.Parts(job.PartRequests)
	}
	s.mu.Unlock()
	for i := range n {
		s.t.change(job.PartKey(r.Provider, i), func(b job.Bucket, _ bool) (job.Bucket, bool) {
			b.Provider = job.PartKey(r.Provider, i)
			return r.Apply(b), true
		})
	}
	return nil
}

// Learn applies l to the key's own item, where its learned limit is kept.
func (s *Buckets) Learn(_ context.Context, l job.Learn) error {
	s.t.change(l.Provider, func(b job.Bucket, _ bool) (job.Bucket, bool) {
		b.Provider = l.Provider
		return l.Apply(b)
	})
	return nil
}

// Bucket answers a bucket's item as it stands: a key's own (part 0, with
// the learned limits), or a part's (job.PartKey).
func (s *Buckets) Bucket(_ context.Context, item string) (job.Bucket, error) {
	b, _ := s.t.get(item)
	b.Provider = item
	return b, nil
}
