package storetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Spend is what every spend balance store answers.
type Spend interface {
	Hold(context.Context, job.SpendHold) (bool, error)
	Settle(context.Context, job.SpendSettle) error
	SettleSeen(context.Context, job.SpendSettle) (job.SpendSettled, error)
	Balance(context.Context, job.SpendHold) (job.SpendBalance, error)
	Holding(context.Context, job.SpendHold) (job.Nanocents, bool, error)
}

// RunSpend is the spend balances' conformance suite (docs/spend.md): a
// tenant holds up to its limit and no further; a hold repeated is held
// once; a settle returns what its
// hold over-took and counts its cost as spent, once however often it is
// repeated, and sees the part's spend after it; a write-off (cost = held) keeps the hold counted, as spent;
// tenants and periods do not share a balance; and racing holds never
// pass the limit.
func RunSpend(t *testing.T, s Spend) {
	ctx := t.Context()
	at := time.Now().UTC()
	hold := func(tenant, entry string, amount job.Nanocents) job.SpendHold {
		return job.SpendHold{Tenant: tenant, Period: job.Day, At: at, Limit: job.Cents(100), Entry: entry, Amount: amount}
	}
	take := func(h job.SpendHold) bool {
		t.Helper()
		ok, err := s.Hold(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	balance := func(h job.SpendHold) job.SpendBalance {
		t.Helper()
		b, err := s.Balance(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	settle := func(h job.SpendHold, cost job.Nanocents) {
		t.Helper()
		if err := s.Settle(ctx, job.SpendSettle{SpendHold: h, Cost: cost}); err != nil {
			t.Fatal(err)
		}
	}
	a1, a2, a3 := hold("tenant-a", "job_1@1", job.Cents(60)), hold("tenant-a", "job_2@1", job.Cents(40)), hold("tenant-a", "job_3@1", job.Cents(1))
	if !take(a1) || !take(a2) {
		t.Fatal("a tenant within its limit was refused")
	}
	if take(a3) {
		t.Fatal("a hold passed the limit")
	}
	if !take(a1) {
		t.Fatal("a hold repeated (its answer lost, or its give-back) was refused")
	}
	if b := balance(a1); b != (job.SpendBalance{Held: job.Cents(100)}) {
		t.Fatalf("balance with two holds: %+v", b)
	}
	if !take(hold("tenant-b", "job_1@1", job.Cents(100))) || !take(job.SpendHold{Tenant: "tenant-a", Period: job.Month, At: at, Limit: job.Cents(100), Entry: "job_1@1", Amount: job.Cents(100)}) {
		t.Fatal("another tenant, or another period, was refused for tenant-a's day")
	}
	// The worst case over-took 45; the settle sees the part's spend (a
	// limit of $1 is one part: the whole limit its share), and once
	// repeated, nothing.
	for i, want := range []job.SpendSettled{{Spent: job.Cents(15), Share: job.Cents(100)}, {}} {
		if seen, err := s.SettleSeen(ctx, job.SpendSettle{SpendHold: a1, Cost: job.Cents(15)}); err != nil || seen != want {
			t.Fatalf("settle %d of a1 saw %+v, %v; want %+v", i+1, seen, err, want)
		}
	}
	if b := balance(a1); b != (job.SpendBalance{Spent: job.Cents(15), Held: job.Cents(40)}) {
		t.Fatalf("after a settle repeated: %+v, want 15 spent, 40 held", b)
	}
	if !take(hold("tenant-a", "job_3@1", job.Cents(45))) || take(a3) {
		t.Fatal("a settle did not return exactly what its hold over-took")
	}
	holdingFinds(t, s, a1, a2)
	settle(a2, a2.Amount) // written off: the hold becomes an estimate spent
	if b := balance(a1); b != (job.SpendBalance{Spent: job.Cents(55), Held: job.Cents(45)}) {
		t.Fatalf("after a write-off: %+v, want 55 spent, 45 held", b)
	}
	settle(hold("tenant-a", "job_9@1", job.Cents(5)), 0) // never held
	if b := balance(a1); b != (job.SpendBalance{Spent: job.Cents(55), Held: job.Cents(45)}) {
		t.Fatalf("a settle of no hold changed the balance: %+v", b)
	}
	t.Run("racing holds never pass the limit", func(t *testing.T) { racingHolds(t, s, at) })
}

// racingHolds: 64 holds of $3 at once on a limit of 4 least shares
// ($80, four parts where a store divides) never hold more than the limit,
// and leave less than one hold a part unused.
func racingHolds(t *testing.T, s Spend, at time.Time) {
	limit, amount := 4*job.SpendShareMin, job.Cents(300)
	var in atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			h := job.SpendHold{Tenant: "tenant-race", Period: job.Day, At: at, Limit: limit, Entry: "job_" + strconv.Itoa(i) + "@1", Amount: amount}
			if ok, err := s.Hold(t.Context(), h); err != nil {
				t.Error(err)
			} else if ok {
				in.Add(1)
			}
		})
	}
	wg.Wait()
	held := job.Nanocents(in.Load()) * amount
	b, err := s.Balance(t.Context(), job.SpendHold{Tenant: "tenant-race", Period: job.Day, At: at, Limit: limit})
	switch {
	case err != nil:
		t.Fatal(err)
	case held > limit || b.Held != held || b.Spent != 0:
		t.Fatalf("%d holds of %s granted (%s), the balance holds %s: the limit is %s", in.Load(), amount, held, b.Held, limit)
	case held < limit-job.Nanocents(job.SpendParts(limit))*amount:
		t.Fatalf("only %s of %s held: a part refused a hold it had room for", held, limit)
	}
}

// holdingFinds: a dead attempt's recovery finds a hold (a2, held) by its
// entry alone, at the amount it was taken, and finds none once it is
// settled (a1), where none was taken, or on another tenant's balance.
func holdingFinds(t *testing.T, s Spend, a1, a2 job.SpendHold) {
	holding := func(h job.SpendHold) (job.Nanocents, bool) {
		t.Helper()
		n, ok, err := s.Holding(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		return n, ok
	}
	if n, ok := holding(job.SpendHold{Tenant: a2.Tenant, Period: a2.Period, At: a2.At, Limit: a2.Limit, Entry: a2.Entry}); !ok || n != a2.Amount {
		t.Fatalf("holding of a2 = %v, %v; want %v held", n, ok, a2.Amount)
	}
	if _, ok := holding(a1); ok {
		t.Fatal("a settled hold was still found")
	}
	never := a1
	never.Entry = "job_8@1"
	if _, ok := holding(never); ok {
		t.Fatal("a hold never taken was found")
	}
	other := a2
	other.Tenant = "tenant-b"
	if _, ok := holding(other); ok {
		t.Fatal("another tenant's balance showed tenant-a's hold")
	}
}
