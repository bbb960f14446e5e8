package dynamodb

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// A tenant's spend balance in one period (job.SpendHold) lives in the
// buckets table beside its slots, divided over parts as its limit says
// (job.SpendParts): items keyed "tenant#spend#<period>#<part>#<tenant>"
// (the period's key, "d20261207" or "m202612"; the tenant last, as the
// slots' keys, so the API's grant "tenant#*" covers them). Each part
// holds three things (docs/spend.md, "How a balance is divided"):
//
//   - used: what the part's holds and settled costs add up to, never more
//     than its share of the limit, by the hold's condition;
//   - spent: what settled attempts cost;
//   - one attribute "h@<entry>" per hold in flight, its amount, so that a
//     settle (a write-off from another worker among them) finds its hold
//     without a read, and one repeated finds nothing to settle again.
//
// DynamoDB's conditions do no arithmetic, so the hold's condition is
// used <= share - amount, the right side worked out before the write.
// Every part expires (expires_at) at its period's end.
const (
	sUsed    = "used"
	sSpent   = "spent"
	sHold    = "h@"
	sExpires = "expires_at"
	// spendProbes is how many parts a hold tries, and a settle walks.
	spendProbes = 4
)

// Spend is the tenants' spend balances in the buckets table.
type Spend struct{ t side }

// NewSpend returns the spend balances over the buckets table.
func NewSpend(c BucketClient, table string) *Spend {
	return &Spend{t: side{layout: bucketsLayout, table: table, get: c, update: c}}
}

func (s *Spend) key(h job.SpendHold, part int) map[string]types.AttributeValue {
	return s.t.key("tenant#spend#" + h.Period.Key(h.At) + "#" + strconv.Itoa(part) + "#" + h.Tenant)
}

// spendOrder is the parts of n that h tries, in turn: distinct (an odd
// step walks every part of a power of two), seeded by the tenant, the
// period and the attempt, so a settle walks the hold's order with no read.
func spendOrder(h job.SpendHold, n int) []int {
	f := fnv.New64a()
	_, _ = f.Write([]byte(h.Tenant + "\x00" + h.Period.Key(h.At) + "\x00" + h.Entry))
	x := f.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	start, step := x%uint64(n), (x>>32)%uint64(max(n/2, 1))*2+1
	out := make([]int, 0, min(spendProbes, n))
	for k := range uint64(min(spendProbes, n)) {
		out = append(out, int((start+k*step)%uint64(n)))
	}
	return out
}

// Hold takes h.Amount on the first part it tries whose share still
// covers it: one conditional UpdateItem a part tried (and, refused, the
// part as the refusal shows it, or a read on an emulator that returns
// none). It reports false when none did (the tenant is at its limit, or
// the parts it tried are). A hold already on a part at its amount (a
// repeat) is answered held, and not taken twice.
func (s *Spend) Hold(ctx context.Context, h job.SpendHold) (bool, error) {
	n := job.SpendParts(h.Limit)
	for _, i := range spendOrder(h, n) {
		room := job.SpendShare(h.Limit, n, i) - h.Amount
		if room < 0 || h.Amount < 0 {
			continue
		}
		e := newExpr()
		used, hold := e.name(sUsed), "#hold"
		e.names[hold] = sHold + h.Entry
		e.when("attribute_not_exists(" + hold + ")")
		e.when("(attribute_not_exists(" + used + ") OR " + used + " <= " + e.value("room", avN(int64(room))) + ")")
		e.set = append(e.set, hold+" = "+e.value("amount", avN(int64(h.Amount))), e.name(sExpires)+" = "+e.value("exp", expiresAt(h.End())))
		e.add = append(e.add, used+" :amount")
		o, err := s.t.change(ctx, "hold a tenant's spend", s.key(h, i), e)
		if err != nil || !o.refused {
			return err == nil, err
		}
		if mine, err := s.holding(ctx, h, i, o.item); err != nil || mine {
			return mine, err
		}
	}
	return false, nil
}

// holding reports whether part i, as its refusal showed it (or a read),
// already holds h at its amount: the attempt's own hold, whose answer
// was lost or whose give-back after a refusal was, taken again. It is
// held once, and the attempt's settle returns it.
func (s *Spend) holding(ctx context.Context, h job.SpendHold, i int, it map[string]types.AttributeValue) (bool, error) {
	it, err := s.t.standing(ctx, "read a tenant's spend", s.key(h, i), it)
	if err != nil {
		return false, err
	}
	_, ok := it[sHold+h.Entry]
	return ok && number(it[sHold+h.Entry]) == int64(h.Amount), nil
}

// Settle settles st's hold: its amount returned and its cost added as
// spent, on the part that holds it, in one conditional UpdateItem on the
// hold being there at its amount. A hold not found (settled already,
// never taken, or taken at a limit of another part count) changes
// nothing: what it holds stays counted until the period ends, never
// spent twice.
func (s *Spend) Settle(ctx context.Context, st job.SpendSettle) error {
	_, err := s.SettleSeen(ctx, st)
	return err
}

// SettleSeen is Settle answering what it saw: the part's spend after the
// settle, from the update's own answer (no read), and its share of the
// limit; zero when it found no hold.
func (s *Spend) SettleSeen(ctx context.Context, st job.SpendSettle) (job.SpendSettled, error) {
	n := job.SpendParts(st.Limit)
	for _, i := range spendOrder(st.SpendHold, n) {
		e := newExpr()
		hold := "#hold"
		e.names[hold] = sHold + st.Entry
		e.when(hold + " = " + e.value("held", avN(int64(st.Amount))))
		e.rem = append(e.rem, hold)
		e.add = append(e.add, e.name(sUsed)+" "+e.value("delta", avN(int64(st.Cost-st.Amount))),
			e.name(sSpent)+" "+e.value("cost", avN(int64(st.Cost))))
		o, err := s.t.change(ctx, "settle a tenant's spend", s.key(st.SpendHold, i), e)
		if err != nil {
			return job.SpendSettled{}, err
		}
		if !o.refused {
			return job.SpendSettled{Spent: job.Nanocents(number(o.item[sSpent])), Share: job.SpendShare(st.Limit, n, i)}, nil
		}
	}
	return job.SpendSettled{}, nil
}

// Holding answers the amount h's entry holds on the balance, and whether
// it holds one, reading (strongly consistent) the parts a hold of h
// tries, in its order, until one has it: what a dead attempt's recovery
// asks (docs/spend.md, "Crash windows"), a unit a part read.
func (s *Spend) Holding(ctx context.Context, h job.SpendHold) (job.Nanocents, bool, error) {
	for _, i := range spendOrder(h, job.SpendParts(h.Limit)) {
		it, err := s.t.read(ctx, "read a tenant's spend", s.key(h, i), true)
		if err != nil {
			return 0, false, err
		}
		if v, ok := it[sHold+h.Entry]; ok {
			return job.Nanocents(number(v)), true, nil
		}
	}
	return 0, false, nil
}

// Balance is the tenant's balance in h's period at h's limit: every part
// read at once, strongly consistent (a read a unit each).
func (s *Spend) Balance(ctx context.Context, h job.SpendHold) (job.SpendBalance, error) {
	n := job.SpendParts(h.Limit)
	used, spent, errs := make([]int64, n), make([]int64, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			it, err := s.t.read(ctx, "read a tenant's spend", s.key(h, i), true)
			used[i], spent[i], errs[i] = number(it[sUsed]), number(it[sSpent]), err
		})
	}
	wg.Wait()
	var b job.SpendBalance
	for i := range n {
		b.Spent += job.Nanocents(spent[i])
		b.Held += job.Nanocents(used[i] - spent[i])
	}
	return b, errors.Join(errs...)
}

// number is v's integer, 0 when it is none.
func number(v types.AttributeValue) int64 {
	n, _ := v.(*types.AttributeValueMemberN)
	if n == nil {
		return 0
	}
	x, _ := strconv.ParseInt(n.Value, 10, 64)
	return x
}
