package job

import (
	"strconv"
	"strings"
	"time"
)

// A tenant's spend limits (docs/spend.md): what a tenant may spend in a UTC
// day or month, kept by holding each attempt's worst case against the
// tenant's balance for the period, as the claim holds it against the job's
// budget.

// Period is a kind of spend period: a UTC calendar day or month.
type Period string

const (
	Day   Period = "day"
	Month Period = "month"
)

// Periods lists the kinds of period, in the order limits are taken.
func Periods() []Period { return []Period{Day, Month} }

// Bounds are the start and end (exclusive) of the period of kind p that
// holds t, in UTC.
func (p Period) Bounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	if p == Month {
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 0, 1)
}

// Key names the period of kind p that holds t: "d20261207", "m202612".
func (p Period) Key(t time.Time) string {
	t = t.UTC()
	if p == Month {
		return "m" + t.Format("200601")
	}
	return "d" + t.Format("20060102")
}

// PeriodLimit is a tenant's limit in one kind of period; a tenant with no
// limit in a period has no PeriodLimit for it.
type PeriodLimit struct {
	Period Period
	Limit  Nanocents
}

// SpendHold is an attempt's hold on its tenant's balance in the period
// that holds At: Amount taken while the balance's part the hold lands on
// stays within its share of Limit. Entry names the attempt (SpendEntry),
// so that its settle, and a write-off by another worker, find the hold
// without a read, and a settle repeated finds nothing to settle twice.
type SpendHold struct {
	Tenant string
	Period Period
	At     time.Time
	Limit  Nanocents
	Entry  string
	Amount Nanocents
}

// SpendEntry names attempt of job id on a balance: a job's attempts
// hold apart, and a deferred attempt (uncounted) that holds again after
// its hold was returned reuses its name.
func SpendEntry(id string, attempt int) string { return id + "@" + strconv.Itoa(attempt) }

// SpendFirstOf is Job.SpendFirst for an attempt owner claimed at claimed,
// its worker's spend limits digesting to digest: "<digest>@<unix
// ms>@<owner>". The attempt's holds are taken in the periods that hold
// claimed, so that a write-off finds them from the record alone; the
// owner, so that a record whose lease has moved on (to the batch lane, or
// a reattach) is not taken at the claiming attempt's word.
func SpendFirstOf(digest string, claimed time.Time, owner string) string {
	return digest + "@" + strconv.FormatInt(claimed.UnixMilli(), 10) + "@" + owner
}

// SpendFirstClaim reads a record's SpendFirst: the digest of its worker's
// limits, the claim's time and the claiming owner; ok is false when it
// says none.
func SpendFirstClaim(j Job) (digest string, claimed time.Time, owner string, ok bool) {
	parts := strings.SplitN(j.SpendFirst, "@", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return "", time.Time{}, "", false
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", time.Time{}, "", false
	}
	return parts[0], time.UnixMilli(n).UTC(), parts[2], true
}

// End is when the hold's period ends: its balance's items expire then.
func (h SpendHold) End() time.Time { _, end := h.Period.Bounds(h.At); return end }

// SpendSettle settles a hold: Held (what the hold took) is returned, Cost
// counted as spent. A write-off settles Cost = Held, an estimate.
type SpendSettle struct {
	SpendHold
	Cost Nanocents
}

// SpendBalance is a tenant's balance in one period: what its settled
// attempts spent and what attempts in flight hold.
type SpendBalance struct {
	Spent Nanocents
	Held  Nanocents
}

// Remaining is what limit leaves of b, never below zero.
func (b SpendBalance) Remaining(limit Nanocents) Nanocents {
	return max(limit-b.Spent-b.Held, 0)
}

// SpendShareMin is the least share of a limit one part of a balance holds
// (docs/spend.md, "How a balance is divided"): an attempt's hold lands on
// one part, so a worst case above a part's share could never be held.
// $20 holds any single call this deployment's routes price today.
const SpendShareMin = 20 * 100 * NanosPerCent

// SpendPartsMax bounds how many parts a balance is divided over: 64 parts
// of ~150 attempts a second each (two writes an attempt, at most a third
// of an item's 1,000 write units) carry 9,600 attempts a second a tenant.
const SpendPartsMax = 64

// SpendParts is how many parts limit is divided over: the fewest, a power
// of 4, whose shares are each at least SpendShareMin, at most
// SpendPartsMax. A limit's parts follow from the limit alone, so a settle
// finds the part its hold took from.
func SpendParts(limit Nanocents) int {
	n := 1
	for n*4 <= SpendPartsMax && limit/Nanocents(n*4) >= SpendShareMin {
		n *= 4
	}
	return n
}

// SpendShare is part i's share of limit divided over n parts: the shares
// add up to the limit exactly, which is what keeps the tenant within it.
func SpendShare(limit Nanocents, n, i int) Nanocents {
	s := limit / Nanocents(n)
	if Nanocents(i) < limit%Nanocents(n) {
		s++
	}
	return s
}

// SpendSettled is what a settle saw where it landed: Spent, what the
// part of the balance that held the hold has spent once the settle's
// cost is counted, out of Share, that part's share of the limit (the
// whole limit on a balance of one part). Zero when the settle found no
// hold.
type SpendSettled struct {
	Spent, Share Nanocents
}

// Passed reports whether the settle of cost took its part's spend from
// below share (a fraction of the part's share) to at least it. A
// tenant's spend passes a share of its limit only if one of its parts'
// spend passes the same share of the part's (the shares add up to the
// limit), so an alarm on a part's passing is never late for the tenant,
// and early by at most how unevenly the holds spread over the parts.
func (s SpendSettled) Passed(cost Nanocents, share float64) bool {
	if s.Share <= 0 || share <= 0 {
		return false
	}
	mark := Nanocents(float64(s.Share) * share)
	return s.Spent-cost < mark && s.Spent >= mark
}
