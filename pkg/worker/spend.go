package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// Spend is the tenants' spend balances every worker shares
// (docs/spend.md): a hold on the balance of a period, and its settle.
type Spend interface {
	Hold(context.Context, job.SpendHold) (bool, error)
	// Holding answers what an attempt's entry holds, for a dead
	// attempt's recovery (parking.SpendFirst).
	Holding(context.Context, job.SpendHold) (job.Nanocents, bool, error)
	// SettleSeen settles, answering the spend of the part it landed on
	// after it, so a settle that takes a tenant past a share of its limit
	// is seen with no read.
	SettleSeen(context.Context, job.SpendSettle) (job.SpendSettled, error)
}

// spendGrant is one hold the attempt took on its tenant's balance in a
// period.
type spendGrant struct {
	hold job.SpendHold
}

// spendLimited reports whether the attempt's tenant has a spend limit.
func (ad *admission) spendLimited() []job.PeriodLimit {
	if ad.spend == nil || ad.spendLimits == nil {
		return nil
	}
	return ad.spendLimits(ad.j.Tenant)
}

// holdSpend takes amount, under entry, from the tenant's balance of each
// period it has a limit in, and reports whether every one covered it (if
// not, the period that did not); a refusal gives back what the others
// took (a lost give-back leaves it held until the period ends: counted,
// never spent twice). A balance that does not answer refuses, said in
// LimitsLocal (Limit spend): the attempt waits, so that no spend goes
// uncounted on the balance (docs/spend.md, "When the balance does not
// answer").
func (ad *admission) holdSpend(ctx context.Context, entry string, amount job.Nanocents) (job.PeriodLimit, bool) {
	now := ad.clock.Now()
	if _, claimed, _, ok := job.SpendFirstClaim(*ad.j); ok {
		now = claimed // the periods a recovery looks in (parking.SpendFirst)
	}
	var took []spendGrant
	for _, l := range ad.spendLimited() {
		if l.Limit <= 0 {
			// $0 lets nothing be spent, not even a worst case of zero: a
			// price of zero does not prove a call is free (job.Covers).
			ad.settle(ctx, took, 0)
			return l, false
		}
		h := job.SpendHold{Tenant: ad.j.Tenant, Period: l.Period, At: now, Limit: l.Limit, Entry: entry, Amount: amount}
		ok, err := ad.spend.Hold(ctx, h)
		if err != nil {
			ad.log.Warn("the tenant's spend balance did not answer; the attempt waits", "tenant", h.Tenant, "period", h.Period, "err", err)
			ad.meter.count("LimitsLocal", map[string]string{"Limit": "spend"})
		}
		if !ok {
			ad.settle(ctx, took, 0)
			return l, false
		}
		took = append(took, spendGrant{hold: h})
	}
	ad.granted.holds = append(ad.granted.holds, took...)
	return job.PeriodLimit{}, true
}

// spendLanded lets an attempt whose claim promised to hold its spend
// first (job.Job.SpendFirst) call only if a dead attempt's recovery
// would find its holds (docs/spend.md, "Crash windows"): one whose holds
// landed within the lease guard's margin of the lease's end renews the
// lease first, so no recovery can have looked at its balances and found
// nothing before they landed. The renewal refused, it does not call.
func (ad *admission) spendLanded(ctx context.Context) (refusal, bool) {
	if ad.j.SpendFirst == "" || len(ad.granted.holds) == 0 || ad.clock.Now().Before(ad.j.LeaseUntil.Add(-ad.timing.leaseMargin())) {
		return refusal{}, true
	}
	return ad.renew(ctx)
}

// settleSpend settles every hold the attempt took at what it paid (all
// it held, when a generation goes on without it): run once its outcome
// is recorded.
func (ad *admission) settleSpend(ctx context.Context) {
	grants := ad.granted.holds
	ad.granted.holds = nil
	if len(grants) > 0 && !ad.paidKnown && !ad.paidAll {
		ad.log.Warn("the attempt's cost is unknown; its spend holds stay counted until it is written off", "holds", len(grants))
		return
	}
	cost := ad.paid
	if ad.paidAll {
		cost = 0
		for _, g := range grants {
			cost = max(cost, ad.heldIn(grants, g.hold.Period))
		}
	}
	ad.settle(ctx, grants, cost)
}

// heldIn is what grants hold in period p.
func (ad *admission) heldIn(grants []spendGrant, p job.Period) job.Nanocents {
	var n job.Nanocents
	for _, g := range grants {
		if g.hold.Period == p {
			n += g.hold.Amount
		}
	}
	return n
}

// settle settles grants at cost: in each period, cost counted as spent
// on the holds in the order they were taken, each up to its amount, the
// last taking what is left, and the rest returned. It runs on a timeout
// of its own; a settle that fails leaves its hold counted until the
// period ends, the direction that never lets the tenant overspend.
func (ad *admission) settle(ctx context.Context, grants []spendGrant, cost job.Nanocents) {
	if len(grants) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	left := map[job.Period]job.Nanocents{}
	for i, g := range grants {
		c, seen := left[g.hold.Period]
		if !seen {
			c = cost
		}
		st := job.SpendSettle{SpendHold: g.hold, Cost: min(c, g.hold.Amount)}
		if lastOfPeriod(grants, i) {
			st.Cost = c
		}
		left[g.hold.Period] = c - st.Cost
		if seen, err := ad.spend.SettleSeen(ctx, st); err != nil {
			ad.log.Warn("settling the tenant's spend failed; the hold stays counted until the period ends", "period", g.hold.Period, "err", err)
		} else {
			spendPassed(ad.log, ad.meter, st, seen, ad.spendAlarm)
		}
	}
}

// settleTimeout bounds a spend settle, run after the outcome is recorded.
// Longer than a slot's leave (leaveTimeout): a settle lost keeps its hold
// counted until the period ends, the tenant's room with it, and the
// end-to-end test at 50 workers lost settles to a 2 s bound on a loaded
// machine; 5 s is the AWS calls' own default bound
// (AIJOBS_AWS_CALL_TIMEOUT), well inside the Lambda margin that follows
// the finish.
const settleTimeout = 5 * time.Second

// lastOfPeriod reports whether grants[i] is the last of its period.
func lastOfPeriod(grants []spendGrant, i int) bool {
	for _, g := range grants[i+1:] {
		if g.hold.Period == grants[i].hold.Period {
			return false
		}
	}
	return true
}

// spendWait is how long a job whose tenant's balance cannot cover its
// attempt is deferred: the tenant's wait (growing with its message's
// receives), but never past the refused period's end, when the balance
// starts again.
func (ad *admission) spendWait(l job.PeriodLimit) time.Duration {
	w := ad.timing.tenantWait(ad.receives, ad.rand)
	now := ad.clock.Now()
	if _, end := l.Period.Bounds(now); end.Sub(now) < w {
		w = end.Sub(now) + time.Second
	}
	return w
}

// promise is what owner's claim at now records of the worker's spend
// limits (job.Job.SpendFirst): the attempt holds them before it calls.
func (w *Worker) promise(now time.Time, owner string) string {
	if w.spendFirst == nil {
		return ""
	}
	return job.SpendFirstOf(w.spendFirst.Digest, now, owner)
}

// settleDead settles the spend holds of the dead attempt d, once its
// settlement landed on the record (how; after is the record then). Holds its recovery found (look, a record that promised them) are
// settled as parking.Look.Settles says. Otherwise (a record from a worker
// with other limits, or none) it settles the claim's hold where it may
// be: written off, as spent, an estimate, as the record charges it;
// unparked, the cost its parked outcome recorded, up to that hold; in the
// periods of now and of the record's last write (a settle of a period
// that holds nothing changes nothing). Its raises before fallback rungs,
// whose amounts the record does not keep apart, stay counted until the
// period ends.
func (w *Worker) settleDead(ctx context.Context, d parking.Dead, after job.Job, how parking.How, look parking.Look) {
	cur, now := d.Job, d.Now
	paid := after.Cost - cur.Cost
	if look.Promised {
		if err := w.spendFirst.Settle(ctx, look.Settles(how, paid)); err != nil {
			w.cfg.Logger.Warn("settling a dead attempt's spend failed; its hold stays counted until the period ends", "err", err)
		}
		return
	}
	if w.spend == nil || w.spendLimits == nil {
		return
	}
	cost := cur.Reserve
	if how == parking.Unparked {
		cost = min(max(paid, 0), cur.Reserve)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for _, l := range w.spendLimits(cur.Tenant) {
		for i, at := range []time.Time{now, cur.UpdatedAt} {
			if i > 0 && l.Period.Key(at) == l.Period.Key(now) {
				continue
			}
			h := job.SpendHold{Tenant: cur.Tenant, Period: l.Period, At: at, Limit: l.Limit, Entry: job.SpendEntry(cur.ID, cur.Attempts), Amount: cur.Reserve}
			st := job.SpendSettle{SpendHold: h, Cost: cost}
			if seen, err := w.spend.SettleSeen(ctx, st); err != nil {
				w.cfg.Logger.Warn("settling a dead attempt's spend failed; its hold stays counted until the period ends", "period", l.Period, "err", err)
			} else {
				spendPassed(w.cfg.Logger, w.meter, st, seen, w.cfg.SpendAlarmShare)
			}
		}
	}
}

// spendPassed logs and counts (SpendShareReached) a settle that took its
// part of the tenant's balance past share of the part's limit: the
// tenant is nearing its limit (job.SpendSettled.Passed: never late, and
// exact on a balance of one part). The metric has no dimension, so its
// cost does not grow with the tenants: the tenant is in the log line.
func spendPassed(log *slog.Logger, m meter, st job.SpendSettle, seen job.SpendSettled, share float64) {
	if !seen.Passed(st.Cost, share) {
		return
	}
	log.Warn("a tenant's spend passed the alarm's share of its limit", "tenant", st.Tenant, "period", st.Period,
		"share", share, "limit_cents", st.Limit.String(), "part_spent_cents", seen.Spent.String(), "part_share_cents", seen.Share.String())
	m.count("SpendShareReached", nil)
}
