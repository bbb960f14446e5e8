package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/config"
)

// Units is what one run's jobs consumed of DynamoDB's capacity, as the
// quota front the run went through metered it (internal/quota; docs/testing.md,
// "The quota front"): the read and write units a real table would have
// billed, and the key that came nearest its partition's limit.
type Units struct {
	Jobs    int
	Elapsed time.Duration
	// Scopes are the tables' and their indexes' usage, each table by its
	// role in the stack (jobs, buckets, quarantine, tenants) rather than
	// its prefixed name; the jobs table's indexes and the buckets table
	// are there even when the run used none of them, at zero.
	Scopes []quota.Usage
	// Hottest is the key whose busiest second came nearest its
	// partition's limit, named as Scopes are.
	Hottest quota.Usage
}

// unitsOf reads m, which metered a run of jobs over tables named by cfg.
func unitsOf(m *quota.Meter, cfg config.Config, jobs int, elapsed time.Duration) Units {
	role := map[string]string{cfg.Table: "jobs", cfg.BucketsTable: "buckets", cfg.QuarantineTable: "quarantine", cfg.TenantsTable: "tenants"}
	name := func(u quota.Usage) quota.Usage {
		if r, ok := role[u.Table]; ok {
			u.Table = r
		}
		return u
	}
	st := cfg.Settings
	want := []quota.Scope{{Table: "jobs"}, {Table: "jobs", Index: st.TenantIndex}, {Table: "jobs", Index: st.CreatedIndex},
		{Table: "jobs", Index: st.ActiveIndex}, {Table: "jobs", Index: st.FailureIndex}, {Table: "jobs", Index: st.EnlistedIndex},
		{Table: "buckets"}}
	u := Units{Jobs: jobs, Elapsed: elapsed, Hottest: name(m.Hottest())}
	seen := map[quota.Scope]bool{}
	for _, use := range m.All() {
		if use.Key == "" {
			use = name(use)
			seen[use.Scope] = true
			u.Scopes = append(u.Scopes, use)
		}
	}
	for _, s := range want {
		if !seen[s] {
			u.Scopes = append(u.Scopes, quota.Usage{Scope: s})
		}
	}
	slices.SortStableFunc(u.Scopes, func(a, b quota.Usage) int { return rank(want, a.Scope) - rank(want, b.Scope) })
	return u
}

// rank places the scopes asked for first, in their order, then the rest
// as the meter sorted them.
func rank(want []quota.Scope, s quota.Scope) int {
	if i := slices.Index(want, s); i >= 0 {
		return i
	}
	return len(want)
}

// UnitsReport renders u as Markdown: units per job by table and index,
// each one's busiest second, and the hottest key.
func UnitsReport(u Units) string {
	var b strings.Builder
	per := func(n float64) float64 { return n / float64(max(u.Jobs, 1)) }
	b.WriteString("| table / index | write units per job | read units per job | busiest second, write / read units |\n|---|---|---|---|\n")
	for _, s := range u.Scopes {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.0f / %.0f |\n", scopeName(s.Scope), per(s.Write), per(s.Read), s.PeakWrite, s.PeakRead)
	}
	h := u.Hottest
	if h.Key == "" {
		b.WriteString("\nhottest key: none metered\n")
		return b.String()
	}
	secs := max(u.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(&b, "\nhottest key: %s = %q, %.0f write and %.0f read units in its busiest second (%.1f and %.1f a second over the run; a partition's limit is 1,000 and 3,000), %d throttled\n",
		scopeName(h.Scope), h.Key, h.PeakWrite, h.PeakRead, h.Write/secs, h.Read/secs, h.Throttled)
	return b.String()
}

func scopeName(s quota.Scope) string {
	if s.Index == "" {
		return s.Table
	}
	return s.Table + " / " + s.Index
}

// unitsEnv turns the tenant limits on, high enough never to defer or
// refuse a job, so that the buckets table's slot writes are metered
// too: the shipped default sets no tenant limit and so writes none.
var unitsEnv = map[string]string{"AIJOBS_TENANT_IN_FLIGHT": "1000", "AIJOBS_TENANT_QUEUED": "1000"}

// RunUnits runs o again through a quota front over o.Endpoint that meters
// and never throttles (no rate limit, the 400 KB item limit only), with
// the tenant limits on (unitsEnv), and answers its units per job.
func RunUnits(ctx context.Context, o Options) (Result, error) {
	front, err := quota.Start(o.Endpoint, quota.Limits{})
	if err != nil {
		return Result{}, err
	}
	defer front.Stop()
	env := maps.Clone(unitsEnv)
	maps.Copy(env, o.Env) // a run's own settings (UnitsByInput's) over the limits'
	o.Endpoint, o.Meter, o.Env = front.Endpoint, front.Meter, env
	return Run(ctx, o)
}
