package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
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

// TestReportGivesEachLane: one line per lane, cheapest first (a lane no
// job used still shows, a result_lane outside them is named after),
// then saved_cents on the records against the bill, naming the jobs at
// the bill's exact cost whose saving is not the bill's.
func TestReportGivesEachLane(t *testing.T) {
	r := &Report{Lanes: map[job.Lane]*LaneCount{
		job.Flex:     {Succeeded: 7, Saved: 700, Requests: 10, Billed: 8, Refused: 2, BillSaved: 800},
		job.Standard: {Succeeded: 3, Requests: 4, Billed: 4},
		job.Priority: {},
		"":           {Succeeded: 1},
	}, Saved: SavedCount{Recorded: 650, Billed: 800, Exact: 9, Differ: 1, Differing: []string{"job_x (#4: record 0.00000005, bill 0.0000002)"}}}
	out := r.String()
	want := "lanes (route plain offers flex and priority): succeeded jobs by result_lane and their saved_cents; aijobs' model requests by service_tier\n" +
		"  lane flex:      7 succeeded in it (saved_cents 0.0000007); 10 requests: 8 billed (saving 0.0000008 on the bill), 2 refused for capacity\n" +
		"  lane standard:  3 succeeded in it (saved_cents 0); 4 requests: 4 billed (saving 0 on the bill), 0 refused for capacity\n" +
		"  lane priority:  0 succeeded in it (saved_cents 0); 0 requests: 0 billed (saving 0 on the bill), 0 refused for capacity\n" +
		"  lane unnamed:   1 succeeded in it (saved_cents 0); 0 requests: 0 billed (saving 0 on the bill), 0 refused for capacity\n" +
		"  saved_cents of the finished jobs: records 0.00000065, bill 0.0000008; 1 of the 9 jobs at the bill's exact cost record another saving than the bill's\n" +
		"  saved_cents not the bill's: job_x (#4: record 0.00000005, bill 0.0000002)\n"
	if !strings.Contains(out, want) {
		t.Errorf("the report's lanes are not\n%s\nin:\n%s", want, out)
	}
}
