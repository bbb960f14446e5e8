package memstore

import (
	"context"

	"github.com/aijobs/aijobs/pkg/job"
)

// Spend is the tenants' spend balances in memory, for tests: one exact
// balance a tenant and period, as nothing here has a hot key
// (pkg/dynamodb divides a balance over parts: docs/spend.md); it passes
// the same suite.
type Spend struct {
	t table[string, balance] // tenant and period key
}

// balance is one tenant's period: its settled spend and its holds.
type balance struct {
	spent job.Nanocents
	holds map[string]job.Nanocents
}

func (b balance) held() job.Nanocents {
	var n job.Nanocents
	for _, h := range b.holds {
		n += h
	}
	return n
}

// NewSpend returns no balances.
func NewSpend() *Spend { return &Spend{} }

func spendKey(h job.SpendHold) string { return h.Tenant + "\x00" + h.Period.Key(h.At) }

// Hold takes h.Amount while the balance's spent and held stay within the
// limit; a hold already taken at its amount is answered held, not taken
// twice.
func (m *Spend) Hold(_ context.Context, h job.SpendHold) (bool, error) {
	ok := false
	m.t.change(spendKey(h), func(b balance, _ bool) (balance, bool) {
		if held, dup := b.holds[h.Entry]; dup {
			ok = held == h.Amount
			return b, false
		}
		if h.Amount < 0 || b.spent+b.held()+h.Amount > h.Limit {
			return b, false
		}
		if b.holds == nil {
			b.holds = map[string]job.Nanocents{}
		}
		b.holds[h.Entry], ok = h.Amount, true
		return b, true
	})
	return ok, nil
}

// Settle returns st's hold and counts its cost as spent, once: a hold
// not there, or there at another amount, changes nothing.
func (m *Spend) Settle(ctx context.Context, st job.SpendSettle) error {
	_, err := m.SettleSeen(ctx, st)
	return err
}

// SettleSeen is Settle answering the balance's spend after it, out of
// the whole limit (one part); zero when it found no hold.
func (m *Spend) SettleSeen(_ context.Context, st job.SpendSettle) (job.SpendSettled, error) {
	var seen job.SpendSettled
	m.t.change(spendKey(st.SpendHold), func(b balance, _ bool) (balance, bool) {
		if held, ok := b.holds[st.Entry]; !ok || held != st.Amount {
			return b, false
		}
		delete(b.holds, st.Entry) // the map is the table's own: changed in place
		b.spent += st.Cost
		seen = job.SpendSettled{Spent: b.spent, Share: st.Limit}
		return b, true
	})
	return seen, nil
}

// Holding answers the amount h's entry holds, and whether it holds one.
func (m *Spend) Holding(_ context.Context, h job.SpendHold) (job.Nanocents, bool, error) {
	var amount job.Nanocents
	var found bool
	m.t.change(spendKey(h), func(b balance, _ bool) (balance, bool) {
		amount, found = b.holds[h.Entry]
		return b, false
	})
	return amount, found, nil
}

// Balance is the tenant's balance in h's period.
func (m *Spend) Balance(_ context.Context, h job.SpendHold) (job.SpendBalance, error) {
	var out job.SpendBalance
	m.t.change(spendKey(h), func(b balance, _ bool) (balance, bool) {
		out = job.SpendBalance{Spent: b.spent, Held: b.held()}
		return b, false
	})
	return out, nil
}
