package config

import (
	"fmt"
	"strconv"
	"strings"
)

// TenantLimits is a count each tenant may have (docs/fairness.md,
// "Tenant fairness"): jobs in flight at once, or jobs queued. Default for
// every tenant, Tenants for those with their own; 0 is no limit.
type TenantLimits struct {
	Default int
	Tenants map[string]int
}

// For is tenant's limit.
func (l TenantLimits) For(tenant string) int {
	if n, ok := l.Tenants[tenant]; ok {
		return n
	}
	return l.Default
}

// Any reports whether any tenant has a limit.
func (l TenantLimits) Any() bool {
	for _, n := range l.Tenants {
		if n > 0 {
			return true
		}
	}
	return l.Default > 0
}

// MaxTenantLimit is the largest limit a tenant may have: its slots in
// flight and queued are entries of about 45 bytes in string sets on one
// item of the buckets table, and DynamoDB's item limit is 400 KB, so two
// sets of 5,000 fit with room to spare (a full set's ended entries are
// cleared when it refuses).
const MaxTenantLimit = 5000

// parseTenantLimits reads AIJOBS_TENANT_IN_FLIGHT or AIJOBS_TENANT_QUEUED:
// a default and overrides,
// comma-separated ("8,tenant-a=2,tenant-b=0"; 0 lifts the limit for a
// tenant). A tenant's name is as the API knows it (docs/decisions.md,
// "Tenant identity"); it may not hold '=' or ','.
func parseTenantLimits(text string) (TenantLimits, error) {
	var l TenantLimits
	if strings.TrimSpace(text) == "" {
		return l, nil
	}
	for i, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		name, count, named := strings.Cut(part, "=")
		if !named {
			count = name
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		switch {
		case err != nil || n < 0:
			return TenantLimits{}, fmt.Errorf("%q: want a count of 0 or more", part)
		case n > MaxTenantLimit:
			return TenantLimits{}, fmt.Errorf("%q: at most %d (a tenant's entries share one DynamoDB item)", part, MaxTenantLimit)
		case !named && i > 0:
			return TenantLimits{}, fmt.Errorf("%q: only the first entry may be the default; the others are tenant=count", part)
		case !named:
			l.Default = n
		case strings.TrimSpace(name) == "":
			return TenantLimits{}, fmt.Errorf("%q: no tenant", part)
		default:
			if l.Tenants == nil {
				l.Tenants = map[string]int{}
			}
			l.Tenants[strings.TrimSpace(name)] = n
		}
	}
	return l, nil
}
