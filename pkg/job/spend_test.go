package job_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestPeriodsAreUTCCalendarDaysAndMonths(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 30, 0, 0, time.FixedZone("x", -3*3600)) // 2027-01-01 02:30 UTC
	start, end := job.Day.Bounds(at)
	if !start.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day of %v: %v to %v", at, start, end)
	}
	start, end = job.Month.Bounds(at)
	if !start.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month of %v: %v to %v", at, start, end)
	}
	if k := job.Day.Key(at); k != "d20270101" {
		t.Errorf("day key %s", k)
	}
	if k := job.Month.Key(at); k != "m202701" {
		t.Errorf("month key %s", k)
	}
}

// A limit's shares add up to it exactly, each part at least the least
// share unless the limit is one part.
func TestSpendSharesAddUpToTheLimit(t *testing.T) {
	for _, limit := range []job.Nanocents{0, 1, job.Cents(500), job.SpendShareMin * 4, job.SpendShareMin*4 - 1, job.Cents(100_000_000) + 7} {
		n := job.SpendParts(limit)
		var sum job.Nanocents
		for i := range n {
			s := job.SpendShare(limit, n, i)
			if n > 1 && s < job.SpendShareMin {
				t.Errorf("limit %s: part %d of %d holds %s, under the least share", limit, i, n, s)
			}
			sum += s
		}
		if sum != limit || n > job.SpendPartsMax {
			t.Errorf("limit %s over %d parts adds up to %s", limit, n, sum)
		}
	}
	if job.SpendParts(job.SpendShareMin*4) != 4 || job.SpendParts(job.SpendShareMin*4-1) != 1 {
		t.Error("the parts do not follow the least share")
	}
}

// A job deferred for its tenant's spend limit until its deadline ends
// spend_limit, not deadline_exceeded; any other deferral keeps the
// deadline's class.
func TestADeadlineAfterASpendDeferralEndsSpendLimit(t *testing.T) {
	now := time.Now()
	j := job.Job{State: job.Queued, Deadline: now.Add(-time.Second), MaxAttempts: 3, Budget: 10, Reserve: 1, ErrorClass: job.SpendLimit}
	if d := job.WhyRefused(j, now); d.Action != job.Stop || d.Class != job.SpendLimit {
		t.Errorf("spend-deferred past deadline: %+v", d)
	}
	j.ErrorClass = job.RateLimited
	if d := job.WhyRefused(j, now); d.Class != job.DeadlineExceeded {
		t.Errorf("rate-deferred past deadline: %+v", d)
	}
}

// A settle passes a share of its part when it takes the part's spend
// from below the mark to at least it, and only then: not when the part
// was past it already, nor short of it after, nor a settle that found
// no hold.
func TestSpendSettledPassed(t *testing.T) {
	for _, c := range []struct {
		seen job.SpendSettled
		cost job.Nanocents
		want bool
	}{
		{job.SpendSettled{Spent: 80, Share: 100}, 10, true},  // 70 -> 80
		{job.SpendSettled{Spent: 95, Share: 100}, 30, true},  // 65 -> 95
		{job.SpendSettled{Spent: 79, Share: 100}, 10, false}, // short of 80
		{job.SpendSettled{Spent: 90, Share: 100}, 10, false}, // 80 already
		{job.SpendSettled{}, 10, false},                      // no hold found
	} {
		if got := c.seen.Passed(c.cost, 0.8); got != c.want {
			t.Errorf("%+v cost %s: Passed = %v, want %v", c.seen, c.cost, got, c.want)
		}
	}
}
