package worker

import (
	"context"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// leaseGuard stops an attempt's call a margin before the lease it holds
// ends, unless a renewal moved the lease on first. Past the lease's end
// another worker may claim the job, and two calls would be billed for one
// job; the margin covers the clock skew between workers and the time a
// call takes to stop.
type leaseGuard struct {
	clock  job.Clock
	margin time.Duration
	stop   context.CancelCauseFunc

	mu    sync.Mutex
	until time.Time
	timer *time.Timer
	done  bool
}

func newLeaseGuard(clock job.Clock, margin time.Duration, stop context.CancelCauseFunc) *leaseGuard {
	return &leaseGuard{clock: clock, margin: margin, stop: stop}
}

// extend moves the guard to a lease that now ends at until (never back).
// A lease already inside its margin stops the call at once, before the
// caller can start one.
func (g *leaseGuard) extend(until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done || !until.After(g.until) {
		return
	}
	g.until = until
	d := until.Sub(g.clock.Now()) - g.margin
	if g.timer != nil {
		g.timer.Stop()
	}
	if d <= 0 {
		g.stop(errLeaseExpiring)
		return
	}
	g.timer = time.AfterFunc(d, func() { g.stop(errLeaseExpiring) })
}

// disarm ends the guard with its attempt; later renewals change nothing.
func (g *leaseGuard) disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.timer != nil {
		g.timer.Stop()
	}
}
