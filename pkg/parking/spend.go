package parking

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Balances are the tenants' spend balances as a dead attempt's recovery
// reads and settles them (pkg/dynamodb's Spend).
type Balances interface {
	Holding(context.Context, job.SpendHold) (job.Nanocents, bool, error)
	SettleSeen(context.Context, job.SpendSettle) (job.SpendSettled, error)
}

// SpendFirst tells, from the tenants' spend balances, whether a dead
// attempt may have called (docs/spend.md, "Crash windows"). An attempt
// whose record says its worker held these limits first (Job.SpendFirst,
// Digest) calls only once its hold landed on every limited period's
// balance before its lease's end: a period that holds nothing for it
// proves it never called, and its write-off charges nothing (Dead.Void)
// where it would otherwise charge its hold, for money nobody spent.
type SpendFirst struct {
	Balances Balances
	Limits   func(tenant string) []job.PeriodLimit
	Digest   string
	// Settled, if set, is told of each settle of a hold the recovery
	// found (the worker's alarm on a tenant's share of its limit).
	Settled func(job.SpendSettle, job.SpendSettled)
}

// Look is what a recovery found of a dead attempt's spend holds.
type Look struct {
	// Promised says the record's claim held these limits first: Void and
	// Found are then the whole truth of the attempt's holds.
	Promised bool
	// Void says a limited period holds nothing for the attempt.
	Void bool
	// Found are the holds found, each to be settled at its amount (spent,
	// an estimate) unless the caller says otherwise.
	Found []job.SpendSettle
}

// Look reads what cur's dead attempt holds on its tenant's balances: a
// consistent read of at most a few parts a limited period. A nil
// SpendFirst looks at nothing, nor does a record whose promise does not
// hold for its attempt: made under other limits, or by another owner than
// the lease's (the job went to the batch lane, or was reattached: its
// holds were settled with the generation that went on), or with a
// generation started (Pending: a call was made, whatever the balance
// shows). Such an attempt is charged its hold, as before promises.
func (f *SpendFirst) Look(ctx context.Context, cur job.Job) (Look, error) {
	if f == nil || f.Balances == nil || f.Limits == nil {
		return Look{}, nil
	}
	digest, claimed, owner, ok := job.SpendFirstClaim(cur)
	limits := f.Limits(cur.Tenant)
	if !ok || digest != f.Digest || owner != cur.LeaseOwner || cur.Pending != nil || len(limits) == 0 {
		return Look{}, nil
	}
	l := Look{Promised: true}
	for _, pl := range limits {
		h := job.SpendHold{Tenant: cur.Tenant, Period: pl.Period, At: claimed, Limit: pl.Limit, Entry: job.SpendEntry(cur.ID, cur.Attempts)}
		amount, held, err := f.Balances.Holding(ctx, h)
		if err != nil {
			return Look{}, err
		}
		if !held {
			l.Void = true
			continue
		}
		h.Amount = amount
		l.Found = append(l.Found, job.SpendSettle{SpendHold: h, Cost: amount})
	}
	return l, nil
}

// Settle settles found on the balances, on a timeout of its own; one
// that fails leaves its hold counted until the period ends (never spent
// twice, never lost).
func (f *SpendFirst) Settle(ctx context.Context, found []job.SpendSettle) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var first error
	for _, st := range found {
		seen, err := f.Balances.SettleSeen(ctx, st)
		switch {
		case err != nil && first == nil:
			first = err
		case err == nil && f.Settled != nil:
			f.Settled(st, seen)
		}
	}
	return first
}

// settleTimeout bounds a recovery's settles, which run after the record's
// write-off landed: as the worker's own (pkg/worker's settleTimeout).
const settleTimeout = 5 * time.Second

// Settles are the settles of l's holds once the attempt was settled by
// how: as spent (an estimate) when written off, returned when voided, and
// up to what it paid (paid, its parked outcome's cost) when unparked.
func (l Look) Settles(how How, paid job.Nanocents) []job.SpendSettle {
	out := make([]job.SpendSettle, 0, len(l.Found))
	for _, st := range l.Found {
		switch how {
		case Voided, Returned:
			st.Cost = 0
		case Unparked:
			st.Cost = min(max(paid, 0), st.Amount)
		}
		out = append(out, st)
	}
	return out
}
