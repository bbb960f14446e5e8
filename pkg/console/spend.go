package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Spend is the tenants' spend balances the console reads (pkg/dynamodb's
// Spend): the workers hold and settle them; the console only looks.
type Spend interface {
	Balance(ctx context.Context, h job.SpendHold) (job.SpendBalance, error)
}

// maxSpendTenants bounds the tenants one view of the page reads: each
// period of each is 1 to 64 strongly consistent GetItems.
const maxSpendTenants = 200

// spendRow is one tenant's balance in one period against its limit.
type spendRow struct {
	Tenant    string
	Period    job.Period
	Limit     job.Nanocents
	Spent     job.Nanocents
	Held      job.Nanocents
	Remaining job.Nanocents
	// Used is spent and held over the limit, 1 for a limit of zero.
	Used float64
	Ends time.Time
}

// spendPage lists each tenant's spend against its limits, the fullest
// first.
type spendPage struct {
	page
	Off     bool // no limit is configured: the page says so
	Rows    []spendRow
	Tenants int
	Omitted int
}

func (c *Console) spend(w http.ResponseWriter, r *http.Request) {
	p := spendPage{page: c.page(r, "spend", "Spend"), Off: c.cfg.Spend == nil || c.cfg.SpendLimits == nil}
	if p.Off {
		c.render(w, r, "spend.html", p)
		return
	}
	tenants, err := c.spendTenants(r.Context())
	if err != nil {
		c.unavailable(w, "spend", err)
		return
	}
	if len(tenants) > maxSpendTenants {
		p.Omitted, tenants = len(tenants)-maxSpendTenants, tenants[:maxSpendTenants]
	}
	p.Tenants = len(tenants)
	for _, t := range tenants {
		for _, l := range c.cfg.SpendLimits(t) {
			b, err := c.cfg.Spend.Balance(r.Context(), job.SpendHold{Tenant: t, Period: l.Period, At: p.Now, Limit: l.Limit})
			if err != nil {
				c.unavailable(w, "spend", err)
				return
			}
			_, end := l.Period.Bounds(p.Now)
			row := spendRow{Tenant: t, Period: l.Period, Limit: l.Limit, Spent: b.Spent, Held: b.Held, Remaining: b.Remaining(l.Limit), Ends: end, Used: 1}
			if l.Limit > 0 {
				row.Used = float64(b.Spent+b.Held) / float64(l.Limit)
			}
			p.Rows = append(p.Rows, row)
		}
	}
	slices.SortStableFunc(p.Rows, func(a, b spendRow) int {
		return cmp.Or(cmp.Compare(b.Used, a.Used), cmp.Compare(a.Tenant, b.Tenant))
	})
	c.render(w, r, "spend.html", p)
}

// spendTenants are the tenants to show, sorted: those the configuration
// names, and those with jobs in the overview's window (its cached read:
// no tenant table exists, and a tenant with no recent job has spent
// nothing lately).
func (c *Console) spendTenants(ctx context.Context) ([]string, error) {
	snap, err := c.snap.get(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, t := range c.cfg.SpendTenants {
		seen[t] = true
	}
	for _, j := range snap.Jobs {
		seen[j.Tenant] = true
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}
