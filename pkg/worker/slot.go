package worker

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Slots are the tenants' in-flight slots every worker shares
// (docs/architecture.md, "Tenant fairness").
type Slots interface {
	Enter(context.Context, job.Slot) (bool, error)
	Leave(context.Context, job.Slot) error
}

// tenantWait is how long a job whose tenant has its limit in flight is
// deferred, by the receives of its message: a heartbeat or a backoff
// base, whichever is longer, doubling with each receive up to the backoff
// ceiling, jittered. A tenant's backlog then steps out of the queue's way
// as it grows, where a fixed wait would bring all of it back in front of
// the other tenants' messages again and again (a standard queue without
// fair ordering, as locally, serves what is visible first).
func (t Timing) tenantWait(receives int, rnd func() float64) time.Duration {
	return job.Backoff(receives, max(t.BackoffBase, t.Heartbeat), max(t.BackoffMax, t.BackoffBase, t.Heartbeat), rnd())
}

// enter takes the attempt's place among its tenant's jobs in flight, and
// reports whether it may run; the place lasts at most until the
// invocation's deadline, so a worker that dies frees it by then. A store
// that does not answer lets the attempt run: fairness must not stop
// every job when one table is out.
func (a *attempt) enter(ctx context.Context, route job.Route) bool {
	if a.slots == nil || a.inFlight == nil {
		return true
	}
	limit := a.inFlight(a.j.Tenant)
	if limit <= 0 {
		return true
	}
	until := a.start.Add(route.Timeout() + a.timing.AttemptMargin + finishTimeout)
	if dl, ok := ctx.Deadline(); ok {
		until = dl
	}
	a.granted.slot = job.Slot{Tenant: a.j.Tenant, JobID: a.j.ID, Now: a.clock.Now(), Until: until, Limit: limit}
	ok, err := a.slots.Enter(ctx, a.granted.slot)
	if err != nil {
		a.log.Warn("the tenant's slots did not answer; running without one", "err", err)
		a.granted.slot = job.Slot{}
		return true
	}
	if !ok {
		a.granted.slot = job.Slot{}
	}
	return ok
}

// leaveTimeout bounds the slot's return, which runs after the outcome is
// recorded, perhaps past the invocation's deadline margin.
const leaveTimeout = 2 * time.Second

// leave gives the attempt's slot back, whatever became of the attempt
// (its end is the slot's own bound if this fails).
func (a *attempt) leave(ctx context.Context) {
	if a.granted.slot.Tenant == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	if err := a.slots.Leave(ctx, a.granted.slot); err != nil {
		a.log.Warn("leaving the tenant's slot failed; it frees itself at its end", "err", err)
	}
}

// started gives back the job's place among its tenant's queued jobs, which
// the API took at create, once its first attempt's call may start: a job
// is queued until then, however often it was deferred. Only the first
// attempt does: a retried job is no longer queued. A lost leave frees the
// place at the job's deadline.
func (a *attempt) started(ctx context.Context) {
	if a.queued == nil || a.queuedMax == nil || a.j.Attempts != 1 || a.queuedMax(a.j.Tenant) <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	sl := job.Slot{Tenant: a.j.Tenant, JobID: a.j.ID, Until: a.j.Deadline}
	if err := a.queued.Leave(ctx, sl); err != nil {
		a.log.Warn("giving back the job's queued place failed; it frees itself at the deadline", "err", err)
	}
}
