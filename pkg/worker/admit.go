package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// admission is one attempt's admission: the limits it is admitted
// under (the crew's), what they granted it (its slot in flight, its last
// allowed take), and what it needs besides: the store its lease is
// renewed in, the clock, timing and jitter its waits follow. It reads the
// attempt's record and start and moves them (j, start: the attempt's
// own): a renewal after a wait in place extends the lease, and the
// attempt starts when its call may go.
type admission struct {
	limits
	granted
	store    Store
	clock    job.Clock
	timing   Timing
	rand     func() float64
	log      *slog.Logger
	meter    meter
	j        *job.Job
	owner    string
	start    *time.Time
	receives int // the message's, which the tenant's wait grows with
	// paid is what the attempt's calls cost, as its finish settled it,
	// and paidAll says its spend holds go with a generation still
	// running (detached, or enlisted in the batch lane), so they are
	// settled as spent, an upper estimate: the settle of its spend holds.
	// paidKnown says paid is known: no call went, or the finish settled
	// it. Unknown (a panic after the call), the holds stay for the
	// write-off to settle as spent, never returned unpaid.
	paid      job.Nanocents
	paidAll   bool
	paidKnown bool
}

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
// that does not answer holds the tenant to this worker's share of its
// limit (share.hold), said in LimitsLocal: fairness must neither stop
// every job when one table is out nor vanish under the load that
// throttles it.
func (ad *admission) enter(ctx context.Context, route job.Route) bool {
	if ad.slots == nil || ad.inFlight == nil {
		return true
	}
	limit := ad.inFlight(ad.j.Tenant)
	if limit <= 0 {
		return true
	}
	until := (*ad.start).Add(route.Timeout() + ad.timing.AttemptMargin + finishTimeout)
	if dl, ok := ctx.Deadline(); ok {
		until = dl
	}
	ad.granted.slot = job.Slot{Tenant: ad.j.Tenant, JobID: ad.j.ID, Now: ad.clock.Now(), Until: until, Limit: limit}
	ok, err := ad.slots.Enter(ctx, ad.granted.slot)
	switch {
	case err != nil:
		ok, ad.granted.slotHere = ad.share.hold(ad.j.Tenant, limit), true
		ad.log.Warn("the tenant's slots did not answer; its limit is held locally", "tenant", ad.j.Tenant,
			"local_limit", ad.share.of(int64(limit)), "admitted", ok, "err", err)
		ad.meter.count("LimitsLocal", map[string]string{"Limit": "slots"})
	case ok:
		ad.share.hold(ad.j.Tenant, 0)
	}
	if !ok {
		ad.granted.slot = job.Slot{}
	}
	return ok
}

// leaveTimeout bounds the slot's return, which runs after the outcome is
// recorded, perhaps past the invocation's deadline margin.
const leaveTimeout = 2 * time.Second

// leave gives the attempt's slot back, whatever became of the attempt
// (its end is the slot's own bound if this fails).
func (ad *admission) leave(ctx context.Context) {
	ad.settleSpend(ctx)
	if ad.granted.slot.Tenant == "" {
		return
	}
	ad.share.release(ad.granted.slot.Tenant)
	if ad.granted.slotHere {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	if err := ad.slots.Leave(ctx, ad.granted.slot); err != nil {
		ad.log.Warn("leaving the tenant's slot failed; it frees itself at its end", "err", err)
	}
}

// started gives back the job's place among its tenant's queued jobs, which
// the API took at create, once its first attempt's call may start: a job
// is queued until then, however often it was deferred. Only the first
// attempt does: a retried job is no longer queued. A lost leave frees the
// place at the job's deadline.
func (ad *admission) started(ctx context.Context) {
	if ad.queued == nil || ad.queuedMax == nil || ad.j.Attempts != 1 || ad.queuedMax(ad.j.Tenant) <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	sl := job.Slot{Tenant: ad.j.Tenant, JobID: ad.j.ID, Until: ad.j.Deadline, Limit: ad.queuedMax(ad.j.Tenant)}
	if err := ad.queued.Leave(ctx, sl); err != nil {
		ad.log.Warn("giving back the job's queued place failed; it frees itself at the deadline", "err", err)
	}
}

// refusal is why admission kept the attempt's call from going, for the
// finish to record (refusal.verdict): the job deferred for wait (class
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
// must have a free slot among its jobs in flight, a balance in each
// period it has a spend limit in that covers the attempt's worst case
// (its reserve, held there until the attempt settles), and the first
// rung's key room in its bucket. A short wait for the bucket is waited in place
// and the lease renewed after it. An admitted attempt holds its tenant's
// slot until it leaves.
func (ad *admission) admit(ctx context.Context, route job.Route, in job.Input) (refusal, bool) {
	if !ad.enter(ctx, route) {
		return refusal{wait: ad.timing.tenantWait(ad.receives, ad.rand), class: job.RateLimited, detail: "the tenant has its limit of jobs in flight"}, false
	}
	if l, ok := ad.holdSpend(ctx, job.SpendEntry(ad.j.ID, ad.j.Attempts), max(ad.j.Reserve, route.Reserve(in, ad.j.Lanes))); !ok {
		return refusal{wait: ad.spendWait(l), class: job.SpendLimit, detail: "the tenant's spend limit for the " + string(l.Period) + " is reached"}, false
	}
	if r, ok := ad.spendLanded(ctx); !ok {
		ad.settle(ctx, ad.granted.holds, 0)
		ad.granted.holds = nil
		return r, false
	}
	entry, _ := route.Entry(ad.j.Lanes)
	wait, waited := ad.take(ctx, entry, in, ad.inlineWait(ctx, route))
	switch {
	case wait > 0:
		return refusal{wait: wait, class: job.RateLimited, detail: "the provider's rate limit is spent"}, false
	case waited:
		if r, ok := ad.renew(ctx); !ok {
			return r, false
		}
	}
	ad.started(ctx)
	// The attempt starts when its call may go: a wait for the bucket is
	// neither run time nor part of the route's timeout, and the lease's
	// cap counts from here.
	if now := ad.clock.Now(); now.After(*ad.start) {
		*ad.start = now
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
func (ad *admission) inlineWait(ctx context.Context, route job.Route) time.Duration {
	w := min(2*time.Second, ad.timing.LeaseTTL/2)
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)-ad.timing.LambdaMargin-route.Timeout()-ad.timing.AttemptMargin)
	}
	return max(w, 0)
}

// take takes rung's worst case from its provider's bucket before a call,
// waiting in place up to inline. It answers 0 when the call may go, else
// the wait the bucket asks for, and whether it waited in place. A bucket
// that cannot answer is replaced by this worker's share of it
// (share.take), said in LimitsLocal: an outage of the buckets table must
// neither stop every model call nor lift the key's limit.
func (ad *admission) take(ctx context.Context, rung job.Rung, in job.Input, inline time.Duration) (time.Duration, bool) {
	key := ad.bucketOf(rung)
	if key == "" {
		return 0, false
	}
	waited := false
	for {
		t := job.Take{Provider: key, Limit: rung.Limit, Now: ad.clock.Now(), Tokens: rung.WorstTokens(in)}
		got, err := ad.buckets.Take(ctx, t)
		if err != nil {
			got = ad.share.take(t)
			ad.log.Warn("the provider's bucket did not answer; its limit is held locally", "bucket", key,
				"local_rpm", got.Limit.RequestsPerMinute, "local_tpm", got.Limit.TokensPerMinute, "wait_ms", got.Wait.Milliseconds(), "err", err)
			ad.meter.count("LimitsLocal", map[string]string{"Limit": "bucket"})
		} else if got.OK {
			ad.share.priced(key, got.Limit)
		}
		switch {
		case got.OK:
			ad.granted.taken = taken{bucket: key, limit: got.Limit, here: err != nil, part: got.Part}
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

// renew extends the claim's lease before the heartbeat starts, after a
// wait in place for the bucket or a spend hold that landed late
// (spendLanded): the call begins with a whole lease ahead of it, as if
// claimed now, or a slow store's first renewal could come after the
// lease guard had stopped a call the provider bills. A lease lost
// meanwhile (a cancel, a write-off) refuses the call as lost; a store
// that does not answer defers the job, since the call would run on a
// short lease.
func (ad *admission) renew(ctx context.Context) (refusal, bool) {
	now := ad.clock.Now()
	j, err := ad.store.Heartbeat(ctx, job.Heartbeat{ID: ad.j.ID, Owner: ad.owner, Now: now, LeaseUntil: now.Add(ad.timing.LeaseTTL)})
	switch job.ErrorCode(err) {
	case "":
		ad.j.LeaseUntil, ad.j.UpdatedAt = j.LeaseUntil, j.UpdatedAt
		return refusal{}, true
	case job.CodeConflict:
		return refusal{lost: true}, false
	}
	ad.log.Warn("renewing the lease before the call failed; deferring", "err", err)
	return refusal{wait: ad.timing.LeaseTTL, class: job.RateLimited, detail: "the lease could not be renewed before the call"}, false
}

// give returns back tokens the attempt's take on bucket key over-took, at
// the limit the take was priced at; nothing when no take was made there.
func (ad *admission) give(ctx context.Context, key string, back int64) {
	t := ad.taken
	ad.taken = taken{}
	if t.bucket != key || back <= 0 {
		return
	}
	g := job.Give{Provider: key, Limit: t.limit, Tokens: back, Part: t.part}
	if t.here {
		ad.share.give(g)
		return
	}
	if err := ad.buckets.Give(ctx, g); err != nil {
		ad.log.Warn("giving over-taken tokens back to the provider's bucket failed", "bucket", key, "err", err)
	}
}
