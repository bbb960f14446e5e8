package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/quota"
)

// The units report gives each table's and index's units per job (an
// index the run never wrote at zero) and its busiest second, and names
// the hottest key with its rate over the run.
func TestUnitsReportGivesUnitsPerJobAndTheHottestKey(t *testing.T) {
	u := Units{Jobs: 200, Elapsed: 4 * time.Second, Scopes: []quota.Usage{
		{Scope: quota.Scope{Table: "jobs"}, Write: 600, Read: 213, PeakWrite: 180, PeakRead: 60},
		{Scope: quota.Scope{Table: "jobs", Index: "by_tenant"}, Write: 600, PeakWrite: 181},
		{Scope: quota.Scope{Table: "jobs", Index: "enlisted"}},
		{Scope: quota.Scope{Table: "buckets"}, Write: 800, Read: 0, PeakWrite: 240},
	}, Hottest: quota.Usage{Scope: quota.Scope{Table: "jobs", Index: "by_tenant", Key: "bench"}, Write: 600, Read: 2, PeakWrite: 181, PeakRead: 1, Throttled: 3}}
	got := UnitsReport(u)
	for _, want := range []string{
		"| table / index | write units per job | read units per job | busiest second, write / read units |",
		"| jobs | 3.00 | 1.06 | 180 / 60 |",
		"| jobs / by_tenant | 3.00 | 0.00 | 181 / 0 |",
		"| jobs / enlisted | 0.00 | 0.00 | 0 / 0 |",
		"| buckets | 4.00 | 0.00 | 240 / 0 |",
		`hottest key: jobs / by_tenant = "bench", 181 write and 1 read units in its busiest second (150.0 and 0.5 a second over the run;`,
		"3 throttled",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("units report lacks %q:\n%s", want, got)
		}
	}
	if got := UnitsReport(Units{Jobs: 1}); !strings.Contains(got, "hottest key: none metered") {
		t.Errorf("a run with no key metered: %s", got)
	}
}
