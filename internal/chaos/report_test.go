package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestPercentiles: nearest rank over the sorted durations; none gives zeros.
func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	if got := percentiles(ds); got != [2]time.Duration{51 * time.Second, 100 * time.Second} {
		t.Fatalf("percentiles of 1..100 s = %v, want p50 51 s and p99 100 s", got)
	}
	if got := percentiles(nil); got != [2]time.Duration{} {
		t.Fatalf("percentiles of nothing = %v", got)
	}
}

// TestReportSplitsTheResumableRoute: the background route's figures
// against the sum of the others', each route's, and the resumed count.
func TestReportSplitsTheResumableRoute(t *testing.T) {
	r := &Report{Routes: map[string]*RouteCount{
		"background": {AijobsBilled: 11, Succeeded: 10, BaselineBilled: 25, BaselineSucceeded: 10},
		"plain":      {AijobsBilled: 14, Succeeded: 10, BaselineBilled: 24, BaselineSucceeded: 8},
		"default":    {AijobsBilled: 6, Succeeded: 5, BaselineBilled: 9, BaselineSucceeded: 4},
	}, Resumed: 3, ResumedJobs: 2, BackgroundRead: 12}
	out := r.String()
	for _, want := range []string{
		"  with resuming (background route): aijobs 1.100 (11 / 10), baseline 2.500 (25 / 10)\n",
		"  without it (the other routes):    aijobs 1.333 (20 / 15), baseline 2.750 (33 / 12)\n",
		"  route plain:       aijobs 1.400 (14 / 10), baseline 3.000 (24 / 8)\n",
		"generations resumed: 3 (background generations read whole by a worker incarnation other than the one that created them, of 12 read whole); 2 jobs succeeded on one\n",
		"  without resuming (each of them generated again), background route: aijobs at least 1.400 (14 / 10)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
