package config

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// SpendLimits are what each tenant may spend a UTC day and a UTC month
// (docs/spend.md): the deployment's default, and per tenant the periods
// an override names. A period with no limit is absent.
type SpendLimits struct {
	Default map[job.Period]job.Nanocents
	// Tenants are the overrides: a period an override names replaces the
	// default's (none, the zero of an absent limit, lifts it); a period
	// it does not name keeps the default's.
	Tenants map[string]map[job.Period]spendOverride
}

// spendOverride is one period of a tenant's override: its limit, or none.
type spendOverride struct {
	limit job.Nanocents
	none  bool
}

// MaxSpendLimit bounds a limit at $10,000,000: far above any one
// tenant's day, far below what nanocents overflow at.
const MaxSpendLimit = 10_000_000 * 100 * job.NanosPerCent

// Digest names these limits (job.Job.SpendFirst): equal limits digest
// equal, whatever order they were written in, so a dead attempt's
// recovery knows whether the worker that claimed it held what it holds.
// Empty when there are none.
func (l SpendLimits) Digest() string {
	if !l.Any() {
		return ""
	}
	var parts []string
	for p, n := range l.Default {
		parts = append(parts, "*="+string(p)+":"+strconv.FormatInt(int64(n), 10))
	}
	for t, ps := range l.Tenants {
		for p, o := range ps {
			parts = append(parts, t+"="+string(p)+":"+strconv.FormatInt(int64(o.limit), 10)+":"+strconv.FormatBool(o.none))
		}
	}
	slices.Sort(parts)
	f := fnv.New64a()
	_, _ = f.Write([]byte(strings.Join(parts, ",")))
	return strconv.FormatUint(f.Sum64(), 36)
}

// For is tenant's limits, one a period that has one, in job.Periods'
// order.
func (l SpendLimits) For(tenant string) []job.PeriodLimit {
	var out []job.PeriodLimit
	for _, p := range job.Periods() {
		limit, ok := l.Default[p]
		if o, named := l.Tenants[tenant][p]; named {
			limit, ok = o.limit, !o.none
		}
		if ok {
			out = append(out, job.PeriodLimit{Period: p, Limit: limit})
		}
	}
	return out
}

// Any reports whether any tenant has a limit.
func (l SpendLimits) Any() bool {
	if len(l.Default) > 0 {
		return true
	}
	for _, o := range l.Tenants {
		for _, p := range o {
			if !p.none {
				return true
			}
		}
	}
	return false
}

// parseSpendLimits reads AIJOBS_TENANT_SPEND: comma-separated entries,
// each the default of a period ("day=$50", "month=$1000") or a tenant's
// override, the tenant as the record names it, of one period or more
// joined by '+' ("jwt:tenant-a=day:$5+month:$100"; "day:none" lifts the
// default for that tenant, "none" lifts both). Amounts are dollars with
// at most two decimals, the '$' optional; $0 lets nothing be spent.
func parseSpendLimits(text string) (SpendLimits, error) {
	var l SpendLimits
	if strings.TrimSpace(text) == "" {
		return l, nil
	}
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case !ok || name == "":
			return SpendLimits{}, fmt.Errorf("%q: want day=$N, month=$N or tenant=day:$N+month:$N", part)
		case name == string(job.Day) || name == string(job.Month):
			d, err := parseDollars(value)
			if err != nil {
				return SpendLimits{}, fmt.Errorf("%q: %w", part, err)
			}
			if l.Default == nil {
				l.Default = map[job.Period]job.Nanocents{}
			}
			l.Default[job.Period(name)] = d
		default:
			o, err := parseSpendOverride(value)
			if err != nil {
				return SpendLimits{}, fmt.Errorf("%q: %w", part, err)
			}
			if l.Tenants == nil {
				l.Tenants = map[string]map[job.Period]spendOverride{}
			}
			l.Tenants[name] = o
		}
	}
	return l, nil
}

// parseSpendOverride reads one tenant's override: "none", or periods
// "day:$5+month:$100", each an amount or "none".
func parseSpendOverride(value string) (map[job.Period]spendOverride, error) {
	o := map[job.Period]spendOverride{}
	if value == "none" {
		for _, p := range job.Periods() {
			o[p] = spendOverride{none: true}
		}
		return o, nil
	}
	for _, pv := range strings.Split(value, "+") {
		period, amount, ok := strings.Cut(strings.TrimSpace(pv), ":")
		p := job.Period(strings.TrimSpace(period))
		if !ok || (p != job.Day && p != job.Month) {
			return nil, fmt.Errorf("%q: want day:$N or month:$N (or none)", pv)
		}
		if strings.TrimSpace(amount) == "none" {
			o[p] = spendOverride{none: true}
			continue
		}
		d, err := parseDollars(amount)
		if err != nil {
			return nil, err
		}
		o[p] = spendOverride{limit: d}
	}
	return o, nil
}

// parseDollars reads "$12.34" (or "12.34"): whole dollars and at most two
// decimals, up to MaxSpendLimit.
func parseDollars(s string) (job.Nanocents, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "$")
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac && (len(frac) == 0 || len(frac) > 2) {
		return 0, fmt.Errorf("%q: dollars with at most two decimals", s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	d, err1 := strconv.ParseInt(whole, 10, 64)
	c, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || d < 0 || c < 0 || strings.HasPrefix(frac, "-") {
		return 0, fmt.Errorf("%q: want an amount of dollars, like $50 or $0.25", s)
	}
	if d > int64(MaxSpendLimit/(100*job.NanosPerCent)) {
		return 0, fmt.Errorf("%q: at most $%d", s, int64(MaxSpendLimit/(100*job.NanosPerCent)))
	}
	return job.Cents(d*100 + c), nil
}
