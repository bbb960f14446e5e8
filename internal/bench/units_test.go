package bench

import (
	"os"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// The units run meters its own jobs through a front of its own: every
// table is named by its role in the stack (no run's prefix), the jobs
// table carries at least each job's put, the buckets table the slot
// writes of the tenant limits it turns on, and the hottest key is named.
func TestTheUnitsRunMetersItsJobsByTable(t *testing.T) {
	const jobs = 20
	r, err := RunUnits(t.Context(), Options{Endpoint: awstest.Endpoint(t), Jobs: jobs, Concurrency: 4, PollEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	u := r.Units
	if u.Jobs != jobs || u.Elapsed <= 0 {
		t.Fatalf("units of %d jobs over %s, want %d jobs", u.Jobs, u.Elapsed, jobs)
	}
	byTable := map[string]float64{}
	for _, s := range u.Scopes {
		switch s.Table {
		case "jobs", "buckets", "quarantine", "tenants":
		default:
			t.Errorf("a table named %q, not by its role", s.Table)
		}
		if s.Index == "" {
			byTable[s.Table] = s.Write
		}
	}
	if byTable["jobs"] < jobs || byTable["buckets"] == 0 {
		t.Errorf("write units: jobs table %v, buckets %v; want at least %d and some", byTable["jobs"], byTable["buckets"], jobs)
	}
	if u.Hottest.Key == "" || u.Hottest.PeakWrite == 0 {
		t.Errorf("no hottest key: %+v", u.Hottest)
	}
	t.Log("\n" + UnitsReport(u))
}
