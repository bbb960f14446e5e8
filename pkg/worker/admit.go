package worker

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Slots are the tenants' in-flight slots every worker shares
// (docs/fairness.md, "Tenant fairness").
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

// refusal is why admission kept the attempt's call from going, for the
// finish to record (attempt.refused): the job deferred for wait (class
// and detail say why: a wait, never a failure), or its lease lost
// meanwhile (lost). Admission decides; only the finish writes.
type refusal struct {
	lost   bool
	wait   time.Duration
	class  job.ErrorClass
	detail string
}

// admit lets the attempt's first call go, or answers why not (a refusal
// the finish records, uncounted, before the slot is left): its tenant
// must have a free slot among its jobs in flight, and the first rung's
// key room in its bucket. A short wait for the bucket is waited in place
// and the lease renewed after it. An admitted attempt holds its tenant's
// slot until it leaves.
func (a *attempt) admit(ctx context.Context, route job.Route, in job.Input) (refusal, bool) {
	if !a.enter(ctx, route) {
		return refusal{wait: a.timing.tenantWait(a.m.receives(), a.rand), class: job.RateLimited, detail: "the tenant has its limit of jobs in flight"}, false
	}
	entry, _ := route.Entry(a.j.Lanes)
	wait, waited := a.take(ctx, entry, in, a.inlineWait(ctx, route))
	switch {
	case wait > 0:
		return refusal{wait: wait, class: job.RateLimited, detail: "the provider's rate limit is spent"}, false
	case waited:
		if r, ok := a.renew(ctx); !ok {
			return r, false
		}
	}
	a.started(ctx)
	// The attempt starts when its call may go: a wait for the bucket is
	// neither run time nor part of the route's timeout, and the lease's
	// cap counts from here.
	if now := a.clock.Now(); now.After(a.start) {
		a.start = now
	}
	return refusal{}, true
}

// inlineWait is the longest a first rung's take may wait in place for
// its bucket before the job is deferred instead: a wait this short costs
// less held in place than a defer and a redelivery. It leaves half the
// claim's lease (at most 2 s in all), and never eats into the time the
// invocation needs for the whole route and its margins after it: a wait
// that would leave the call to be cut by the function's deadline is a
// defer, not a gamble on a generation the provider bills.
func (a *attempt) inlineWait(ctx context.Context, route job.Route) time.Duration {
	w := min(2*time.Second, a.timing.LeaseTTL/2)
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)-a.timing.LambdaMargin-route.Timeout()-a.timing.AttemptMargin)
	}
	return max(w, 0)
}

// take takes rung's worst case from its provider's bucket before a call,
// waiting in place up to inline. It answers 0 when the call may go, else
// the wait the bucket asks for, and whether it waited in place. A bucket
// that cannot answer lets the call go: an outage of the buckets table
// must not stop every model call, and the provider's own limit still
// answers for itself.
func (a *attempt) take(ctx context.Context, rung job.Rung, in job.Input, inline time.Duration) (time.Duration, bool) {
	key := a.bucketOf(rung)
	if key == "" {
		return 0, false
	}
	waited := false
	for {
		got, err := a.buckets.Take(ctx, job.Take{Provider: key, Limit: rung.Limit, Now: a.clock.Now(), Tokens: rung.WorstTokens(in)})
		switch {
		case err != nil:
			a.log.Warn("the provider's bucket did not answer; calling without a take", "bucket", key, "err", err)
			return 0, waited
		case got.OK:
			a.granted.taken = taken{bucket: key, limit: got.Limit}
			return 0, waited
		case got.Wait > inline || ctx.Err() != nil:
			return got.Wait, waited
		}
		inline -= got.Wait
		waited = true
		select {
		case <-ctx.Done():
		case <-time.After(got.Wait):
		}
	}
}

// renew extends the claim's lease after a wait in place for the bucket,
// before the heartbeat starts: the call begins with a whole lease ahead
// of it, as if claimed now, or a slow store's first renewal could come
// after the lease guard had stopped a call the provider bills. A lease
// lost meanwhile (a cancel) refuses the call as lost; a store that does
// not answer defers the job, since the call would run on a short lease.
func (a *attempt) renew(ctx context.Context) (refusal, bool) {
	now := a.clock.Now()
	j, err := a.store.Heartbeat(ctx, job.Heartbeat{ID: a.j.ID, Owner: a.owner, Now: now, LeaseUntil: now.Add(a.timing.LeaseTTL)})
	switch job.ErrorCode(err) {
	case "":
		a.j.LeaseUntil, a.j.UpdatedAt = j.LeaseUntil, j.UpdatedAt
		return refusal{}, true
	case job.CodeConflict:
		return refusal{lost: true}, false
	}
	a.log.Warn("renewing the lease after waiting for the bucket failed; deferring", "err", err)
	return refusal{wait: a.timing.LeaseTTL, class: job.RateLimited, detail: "the lease could not be renewed after waiting for the provider's rate limit"}, false
}
