package worker

import (
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
)

// share is this worker's share of the limits every worker shares, kept in
// memory for the life of the process (a Lambda container serves many
// invocations) and consulted only while a shared store does not answer
// (docs/ratelimits.md, "Provider rate limits"; docs/fairness.md, "Tenant
// fairness"). A limit that vanished when its table was throttled would
// vanish under exactly the load it exists for; a limit divided by the
// workers that share it keeps them together within it without asking
// anyone. Each share is at least one call or one job: a worker must not
// stop because it cannot ask.
type share struct {
	workers int64
	mu      sync.Mutex
	// buckets are the local buckets, by key: the same GCRA times as the
	// shared bucket's (job.Take's Wait and Apply), taken from only while
	// the shared one fails. Learned holds the key's whole limit as this
	// worker last heard it (a shared take's price, an answer's headers, a
	// throttle), which a local take divides.
	buckets map[string]job.Bucket
	// running counts this process's jobs in flight by tenant, however they
	// were admitted, so a local share is measured against all of them.
	running map[string]int
}

// newShare is the share of one worker of workers (at least one).
func newShare(workers int) *share {
	return &share{workers: int64(max(workers, 1)), buckets: map[string]job.Bucket{}, running: map[string]int{}}
}

// of is n's share: n over the workers, at least one; 0 (no limit) stays 0.
func (s *share) of(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return max(n/s.workers, 1)
}

// take is t taken from the key's local bucket at the share of its limit
// (declared, else last heard): job.Take's own rule, so a local take is
// the shared take's arithmetic at a smaller limit.
func (s *share) take(t job.Take) job.Taken {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[t.Provider]
	whole := t.Limit.Or(b.Learned)
	t.Limit = job.RateLimit{RequestsPerMinute: s.of(whole.RequestsPerMinute), TokensPerMinute: s.of(whole.TokensPerMinute)}
	if w := t.Wait(b); w > 0 {
		return job.Taken{Wait: w}
	}
	s.buckets[t.Provider] = t.Apply(b)
	return job.Taken{OK: true, Limit: t.Limit}
}

// priced remembers the limit a shared take on key was priced at, for a
// local take after the store stops answering.
func (s *share) priced(key string, l job.RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	b.Learned = l.Or(b.Learned)
	s.buckets[key] = b
}

// learn applies what a call taught of key's limit to the local bucket, as
// the shared one learns it.
func (s *share) learn(l job.Learn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buckets[l.Provider], _ = l.Apply(s.buckets[l.Provider])
}

// give returns tokens a local take over-took.
func (s *share) give(g job.Give) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[g.Provider]; ok {
		s.buckets[g.Provider] = g.Apply(b)
	}
}

// raise applies the provider's word (a pause, what is left) to the local
// bucket when the shared one could not take it: the local share is then
// no less strict than the provider.
func (s *share) raise(r job.Raise) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buckets[r.Provider] = r.Apply(s.buckets[r.Provider])
}

// hold counts one more of tenant's jobs in flight here; within, when not
// zero, refuses it when the tenant already has its share of within
// running here.
func (s *share) hold(tenant string, within int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if within > 0 && int64(s.running[tenant]) >= s.of(int64(within)) {
		return false
	}
	s.running[tenant]++
	return true
}

// release counts one of tenant's jobs here no longer in flight.
func (s *share) release(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[tenant]--; s.running[tenant] <= 0 {
		delete(s.running, tenant)
	}
}
