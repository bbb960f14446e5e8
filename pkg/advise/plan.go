package advise

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Plan is how an awaited request may spend its time when its end-to-end p99
// has not been measured: what one attempt takes, how many attempts it may
// make, the waits between them, and the fallback rungs each attempt may
// walk.
type Plan struct {
	// AttemptP99 is the p99 of one attempt on the primary model (see P99
	// to compute it from observed durations).
	AttemptP99 time.Duration
	// Attempts is how many attempts the request may make; 1 means no retry.
	Attempts int
	// Backoffs are the waits before the second, third, ... attempt: exactly
	// Attempts-1 of them, or none when retries follow at once.
	Backoffs []time.Duration
	// Rungs are the timeouts of the fallback rungs an attempt tries, in
	// order, when the primary fails (as the worker does: every attempt
	// walks the route's rungs).
	Rungs []time.Duration
}

// P99WithRetries is the latency the slowest requests see under the plan:
//
//	Attempts x (AttemptP99 + sum of Rungs) + sum of Backoffs
//
// It follows the path a slow request takes: each attempt runs the primary
// for as long as its p99 and then, failing, every fallback rung up to the
// rung's timeout; then the request waits its backoff and tries again, until
// its attempts are spent. That is an upper estimate, not a statistical p99
// of the composition, and that is what a hop that cuts hard must be
// compared with: the requests it cuts are exactly these.
func (p Plan) P99WithRetries() (time.Duration, error) {
	if p.AttemptP99 <= 0 {
		return 0, errors.New("plan: the attempt p99 must be positive")
	}
	if p.Attempts < 1 {
		return 0, errors.New("plan: a request makes at least one attempt")
	}
	if len(p.Backoffs) != 0 && len(p.Backoffs) != p.Attempts-1 {
		return 0, fmt.Errorf("plan: %d attempts need %d backoffs (or none), got %d", p.Attempts, p.Attempts-1, len(p.Backoffs))
	}
	attempt := p.AttemptP99
	for i, r := range p.Rungs {
		if r <= 0 {
			return 0, fmt.Errorf("plan: rung %d: the timeout must be positive", i+1)
		}
		attempt += r
	}
	total := attempt * time.Duration(p.Attempts)
	if total/time.Duration(p.Attempts) != attempt {
		return 0, errors.New("plan: the total overflows a duration")
	}
	for i, b := range p.Backoffs {
		if b < 0 {
			return 0, fmt.Errorf("plan: backoff %d is negative", i+1)
		}
		total += b
	}
	return total, nil
}

// P99 is the 99th percentile of observed durations by the nearest-rank
// method: the smallest sample that at least 99 % of the samples do not
// exceed. With fewer than 100 samples that is the largest one, which is the
// honest answer: a smaller sample cannot show a p99.
func P99(samples []time.Duration) (time.Duration, error) {
	if len(samples) == 0 {
		return 0, errors.New("p99: no samples")
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	if s[0] < 0 {
		return 0, errors.New("p99: a duration is negative")
	}
	rank := (99*len(s) + 99) / 100 // ceil(0.99 n), 1-based
	return s[rank-1], nil
}
