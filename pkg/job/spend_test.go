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
