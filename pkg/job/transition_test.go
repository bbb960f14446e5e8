package job_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// t0 is "now" in every transition test.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func norm(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Round(0)
}

// jobsEqual compares records field by field, times by instant.
func jobsEqual(a, b job.Job) bool {
	for _, j := range []*job.Job{&a, &b} {
		j.Deadline, j.LeaseUntil = norm(j.Deadline), norm(j.LeaseUntil)
		j.CreatedAt, j.UpdatedAt, j.ExpiresAt = norm(j.CreatedAt), norm(j.UpdatedAt), norm(j.ExpiresAt)
	}
	return reflect.DeepEqual(a, b)
}

// queued is a fresh record: 3 attempts, 50 cents, an hour to go.
func queued() job.Job {
	return job.Job{
		ID: job.NewID("tenant-a", "k"), Tenant: "tenant-a", RequestKey: "k", State: job.Queued,
		MaxAttempts: 3, Budget: job.Cents(50), Reserve: job.Cents(1), Deadline: t0.Add(time.Hour),
		Version: 2, CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-time.Minute),
	}
}

// running is held by w1 with a lease of 30 more seconds; w1's claim holds
// the reserve.
func running() job.Job {
	j := queued()
	j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w1", t0.Add(30*time.Second)
	j.Held = j.Reserve
	return j
}

func with(j job.Job, f func(*job.Job)) job.Job { f(&j); return j }

func TestPreconditions(t *testing.T) {
	const reserve = job.Nanocents(1_000_000_000) // queued()'s Reserve
	claim := job.Claim{ID: "x", Owner: "w2", Now: t0, LeaseUntil: t0.Add(2 * time.Minute)}
	hb := job.Heartbeat{Owner: "w1", Now: t0, LeaseUntil: t0.Add(time.Minute)}
	succeed := job.Succeed{Owner: "w1", Now: t0}
	release := job.Release{Owner: "w1", Now: t0}
	endOwned := job.End{Owner: "w1", Now: t0, Class: job.Timeout}
	endNobody := job.End{Now: t0, Class: job.DeadlineExceeded}
	cancel := job.Cancel{Tenant: "tenant-a", Now: t0}
	writeOff := job.WriteOff{Owner: "w1", Now: t0, Version: 2} // queued()'s Version

	type allows struct{ claim, hb, succeed, release, endOwned, endNobody, cancel, writeOff bool }
	expired := func(j *job.Job) { j.LeaseUntil = t0.Add(-time.Second) }
	tests := []struct {
		name string
		j    job.Job
		want allows
	}{
		{"queued", queued(), allows{true, false, false, false, false, true, true, false}},
		{"running, live lease, own", running(), allows{false, true, true, true, true, false, true, false}},
		{"running, live lease, other owner", with(running(), func(j *job.Job) { j.LeaseOwner = "w9" }), allows{false, false, false, false, false, false, true, false}},
		// A dead attempt is written off before anything else takes the job:
		// no claim over it, no unowned end; its own worker may still finish.
		{"running, lease expired", with(running(), expired), allows{false, true, true, true, true, false, true, true}},
		{"running, lease ends now", with(running(), func(j *job.Job) { j.LeaseUntil = t0 }), allows{false, true, true, true, true, false, true, true}},
		{"running, lease ends 1ms from now", with(running(), func(j *job.Job) { j.LeaseUntil = t0.Add(time.Millisecond) }), allows{false, true, true, true, true, false, true, false}},
		{"running, expired, other owner", with(running(), func(j *job.Job) { j.LeaseOwner, j.LeaseUntil = "w9", t0.Add(-time.Second) }), allows{false, false, false, false, false, false, true, false}},
		{"running, expired, other version", with(running(), func(j *job.Job) { expired(j); j.Version = 3 }), allows{false, true, true, true, true, false, true, false}},
		{"running, expired, the dead hold leaves the reserve", with(running(), func(j *job.Job) {
			j.LeaseUntil, j.Cost = t0.Add(-time.Second), j.Budget-2*reserve
		}), allows{false, true, true, true, true, false, true, true}},
		{"succeeded", with(running(), func(j *job.Job) { j.State = job.Succeeded }), allows{}},
		{"failed", with(running(), func(j *job.Job) { j.State = job.Failed }), allows{}},
		{"abandoned", with(running(), func(j *job.Job) { j.State = job.Abandoned }), allows{}},
		// A cancel keeps the running attempt's lease; once it runs out, the
		// attempt is written off, so a finished job keeps no hold.
		{"abandoned during an attempt, lease expired", with(running(), func(j *job.Job) { j.State = job.Abandoned; expired(j) }), allows{writeOff: true}},
		{"queued, attempts used", with(queued(), func(j *job.Job) { j.Attempts = 3 }), allows{false, false, false, false, false, true, true, false}},
		{"queued, attempts over", with(queued(), func(j *job.Job) { j.Attempts = 4 }), allows{false, false, false, false, false, true, true, false}},
		{"queued, one attempt left", with(queued(), func(j *job.Job) { j.Attempts = 2 }), allows{true, false, false, false, false, true, true, false}},
		{"queued, deadline now", with(queued(), func(j *job.Job) { j.Deadline = t0 }), allows{false, false, false, false, false, true, true, false}},
		{"queued, deadline passed", with(queued(), func(j *job.Job) { j.Deadline = t0.Add(-time.Second) }), allows{false, false, false, false, false, true, true, false}},
		{"queued, budget spent", with(queued(), func(j *job.Job) { j.Cost = j.Budget }), allows{false, false, false, false, false, true, true, false}},
		{"queued, budget overspent", with(queued(), func(j *job.Job) { j.Cost = j.Budget + 1 }), allows{false, false, false, false, false, true, true, false}},
		{"queued, remaining < reserve", with(queued(), func(j *job.Job) { j.Cost = j.Budget - reserve + 1 }), allows{false, false, false, false, false, true, true, false}},
		{"queued, remaining = reserve", with(queued(), func(j *job.Job) { j.Cost = j.Budget - reserve }), allows{true, false, false, false, false, true, true, false}},
		{"queued, other tenant", with(queued(), func(j *job.Job) { j.Tenant = "tenant-b" }), allows{true, false, false, false, false, true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := allows{claim.Allows(tt.j), hb.Allows(tt.j), succeed.Allows(tt.j), release.Allows(tt.j),
				endOwned.Allows(tt.j), endNobody.Allows(tt.j), cancel.Allows(tt.j), writeOff.Allows(tt.j)}
			if got != tt.want {
				t.Errorf("allows %+v\n          want %+v", got, tt.want)
			}
			// Claimable is the money-blind half of the claim condition.
			if tt.want.claim && !tt.j.Claimable(t0) {
				t.Error("claim allowed but not Claimable")
			}
			// DeadAttempt is the write-off's condition, version aside.
			if tt.want.writeOff && !tt.j.DeadAttempt(t0) {
				t.Error("write-off allowed but no DeadAttempt")
			}
		})
	}
}

func TestPreconditionsNeedAnOwner(t *testing.T) {
	unowned := with(running(), func(j *job.Job) { j.LeaseOwner = "" })
	if (job.Heartbeat{Now: t0}).Allows(unowned) || (job.Succeed{Now: t0}).Allows(unowned) || (job.Release{Now: t0}).Allows(unowned) {
		t.Error("an empty owner holds a job whose lease owner is empty")
	}
	free := func(j *job.Job) { j.Reserve = 0 }
	if !(job.Claim{Now: t0}).Allows(with(queued(), free)) {
		t.Error("a claim with no reserve refused on a fresh job")
	}
	if (job.Claim{Now: t0}).Allows(with(with(queued(), free), func(j *job.Job) { j.Cost = j.Budget })) {
		t.Error("a claim with no reserve allowed on a spent budget")
	}
}

func TestApply(t *testing.T) {
	odd := t0.Add(1500 * time.Microsecond).In(time.FixedZone("X", -7*3600)) // not on a millisecond, not UTC
	result := json.RawMessage(`{"text":"ok"}`)
	tests := []struct {
		name   string
		before job.Job
		apply  func(job.Job) job.Job
		want   func(*job.Job)
	}{
		{"claim", with(queued(), func(j *job.Job) { j.Attempts, j.ErrorClass, j.Progress = 1, job.RateLimited, 0.5 }),
			job.Claim{Owner: "w2", Now: odd, LeaseUntil: odd.Add(time.Minute)}.Apply,
			func(j *job.Job) {
				j.State, j.LeaseOwner, j.LeaseUntil = job.Running, "w2", t0.Add(time.Minute+time.Millisecond)
				j.Attempts, j.Progress = 2, 0 // the last class stays for "attempts used up"
				j.Held = job.Cents(1)
			}},
		{"write-off of a dead attempt: its hold becomes an estimated cost, the job queued", with(running(), func(j *job.Job) {
			j.LeaseUntil, j.Cost, j.NotBefore = t0.Add(-time.Second), 7, t0.Add(-time.Minute)
		}),
			job.WriteOff{Owner: "w1", Now: t0}.Apply,
			func(j *job.Job) {
				j.State, j.ErrorClass, j.ErrorDetail = job.Queued, job.Timeout, job.WriteOffDetail
				j.Cost, j.Held, j.CostEstimated, j.WrittenOff = 7+job.Cents(1), 0, true, []string{"w1"}
				j.LeaseOwner, j.LeaseUntil, j.NotBefore = "", time.Time{}, time.Time{}
			}},
		{"write-off of an attempt cancelled while it ran: the job stays abandoned", with(running(), func(j *job.Job) {
			j.State, j.ErrorClass, j.LeaseUntil, j.WrittenOff = job.Abandoned, job.Cancelled, t0.Add(-time.Second), []string{"w0"}
		}),
			job.WriteOff{Owner: "w1", Now: t0}.Apply,
			func(j *job.Job) {
				j.Cost, j.Held, j.CostEstimated, j.WrittenOff = job.Cents(1), 0, true, []string{"w0", "w1"}
				j.LeaseOwner, j.LeaseUntil = "", time.Time{}
			}},
		{"write-off with nothing held is not an estimate", with(running(), func(j *job.Job) { j.Held, j.LeaseUntil = 0, t0 }),
			job.WriteOff{Owner: "w1", Now: t0}.Apply,
			func(j *job.Job) {
				j.State, j.ErrorClass, j.ErrorDetail, j.WrittenOff = job.Queued, job.Timeout, job.WriteOffDetail, []string{"w1"}
				j.LeaseOwner, j.LeaseUntil = "", time.Time{}
			}},
		{"heartbeat", running(),
			job.Heartbeat{Owner: "w1", Now: t0, LeaseUntil: odd.Add(time.Minute), Progress: 0.4}.Apply,
			func(j *job.Job) { j.LeaseUntil, j.Progress = t0.Add(time.Minute+time.Millisecond), 0.4 }},
		{"heartbeat progress above 1", running(),
			job.Heartbeat{Owner: "w1", Now: t0, LeaseUntil: t0.Add(time.Minute), Progress: 1.7}.Apply,
			func(j *job.Job) { j.LeaseUntil, j.Progress = t0.Add(time.Minute), 1 }},
		{"heartbeat progress NaN", running(),
			job.Heartbeat{Owner: "w1", Now: t0, LeaseUntil: t0.Add(time.Minute), Progress: math.NaN()}.Apply,
			func(j *job.Job) { j.LeaseUntil, j.Progress = t0.Add(time.Minute), 0 }},
		{"succeed", with(running(), func(j *job.Job) { j.Cost, j.ErrorClass, j.ErrorDetail, j.Progress = 7, job.Timeout, "504", 0.3 }),
			job.Succeed{Owner: "w1", Now: t0, Settlement: job.Settlement{Cost: 5, Held: job.Cents(1), Ran: 1500 * time.Millisecond}, Result: result, Model: "m-1", ExpiresAt: odd.Add(time.Hour)}.Apply,
			func(j *job.Job) {
				j.State, j.Result, j.ResultModel, j.Cost, j.Progress = job.Succeeded, result, "m-1", 12, 1
				j.Held, j.RunTime = 0, 1500*time.Millisecond
				j.ErrorClass, j.ErrorDetail = "", ""
				j.LeaseOwner, j.LeaseUntil = "", time.Time{}
				j.ExpiresAt = t0.Add(time.Hour + time.Millisecond)
			}},
		{"release", with(running(), func(j *job.Job) { j.Cost = 7 }),
			job.Release{Owner: "w1", Now: t0, Settlement: job.Settlement{Cost: 5, Held: job.Cents(1), Ran: 1700 * time.Microsecond}, Class: job.RateLimited, Detail: "429"}.Apply,
			func(j *job.Job) {
				j.State, j.Cost, j.ErrorClass, j.ErrorDetail = job.Queued, 12, job.RateLimited, "429"
				j.Held, j.RunTime = 0, time.Millisecond // kept at millisecond precision
				j.LeaseOwner, j.LeaseUntil = "", time.Time{}
			}},
		{"end, retryable class used up -> failed", with(running(), func(j *job.Job) { j.Cost = 7 }),
			job.End{Owner: "w1", Now: t0, Settlement: job.Settlement{Cost: 5, Held: job.Cents(1)}, Class: job.Timeout, Detail: "d", ExpiresAt: t0.Add(90 * 24 * time.Hour)}.Apply,
			func(j *job.Job) {
				j.State, j.Cost, j.ErrorClass, j.ErrorDetail = job.Failed, 12, job.Timeout, "d"
				j.Held = 0
				j.LeaseOwner, j.LeaseUntil, j.ExpiresAt = "", time.Time{}, t0.Add(90*24*time.Hour)
			}},
		{"end, budget -> abandoned", queued(),
			job.End{Now: t0, Class: job.BudgetExhausted, ExpiresAt: t0.Add(time.Hour)}.Apply,
			func(j *job.Job) {
				j.State, j.ErrorClass, j.ExpiresAt = job.Abandoned, job.BudgetExhausted, t0.Add(time.Hour)
			}},
		{"cancel running", with(running(), func(j *job.Job) { j.Cost, j.ErrorClass, j.ErrorDetail = 7, job.Timeout, "d" }),
			job.Cancel{Tenant: "tenant-a", Now: t0, ExpiresAt: t0.Add(time.Hour)}.Apply,
			func(j *job.Job) {
				// The attempt's lease and hold stay until it settles or is written off.
				j.State, j.ErrorClass, j.ErrorDetail = job.Abandoned, job.Cancelled, ""
				j.ExpiresAt = t0.Add(time.Hour)
			}},
		{"add cost to a finished job", with(queued(), func(j *job.Job) { j.State, j.Cost = job.Abandoned, 7 }),
			func(j job.Job) job.Job { return job.AddCost(j, "w1", job.Settlement{Cost: 5}, t0) },
			func(j *job.Job) { j.Cost = 12 }},
		{"settle a discarded attempt", with(running(), func(j *job.Job) { j.State, j.Cost = job.Abandoned, 7 }),
			func(j job.Job) job.Job {
				return job.AddCost(j, "w1", job.Settlement{Cost: 5, Held: job.Cents(1), Ran: 2 * time.Second}, t0)
			},
			func(j *job.Job) {
				j.Cost, j.Held, j.RunTime = 12, 0, 2*time.Second
				j.LeaseOwner, j.LeaseUntil = "", time.Time{}
			}},
		{"settle an attempt of another owner keeps the lease", with(running(), func(j *job.Job) { j.Held = 2 * job.Cents(1) }),
			func(j job.Job) job.Job {
				return job.AddCost(j, "w0", job.Settlement{Cost: 5, Held: job.Cents(1), Ran: time.Second}, t0)
			},
			func(j *job.Job) { j.Cost, j.Held, j.RunTime = 5, job.Cents(1), time.Second }},
		{"settle a written-off attempt: its cost replaces its estimate", with(queued(), func(j *job.Job) {
			j.Cost, j.CostEstimated, j.WrittenOff = 7+job.Cents(1), true, []string{"w1"}
		}),
			func(j job.Job) job.Job {
				return job.AddCost(j, "w1", job.Settlement{Cost: 5, Held: job.Cents(1), Ran: time.Second}, t0)
			},
			func(j *job.Job) { j.Cost, j.RunTime = 12, time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.apply(tt.before)
			want := tt.before
			tt.want(&want)
			want.Version = tt.before.Version + 1
			want.UpdatedAt = t0
			if tt.name == "claim" {
				want.UpdatedAt = t0.Add(time.Millisecond) // odd, truncated
			}
			if !jobsEqual(got, want) {
				t.Errorf("Apply:\n got %+v\nwant %+v", got, want)
			}
			for name, ts := range map[string]time.Time{"UpdatedAt": got.UpdatedAt, "LeaseUntil": got.LeaseUntil, "ExpiresAt": got.ExpiresAt} {
				if !ts.IsZero() && (ts.Nanosecond()%int(time.Millisecond) != 0 || ts.Location() != time.UTC) {
					t.Errorf("%s = %v: not UTC milliseconds", name, ts)
				}
			}
		})
	}
}

func TestNextUpdate(t *testing.T) {
	prev := t0
	tests := []struct {
		name      string
		prev, now time.Time
		want      time.Time
	}{
		{"now earlier (slow clock)", prev, prev.Add(-5 * time.Second), prev.Add(time.Millisecond)},
		{"now equal", prev, prev, prev.Add(time.Millisecond)},
		{"now later within the millisecond", prev, prev.Add(700 * time.Microsecond), prev.Add(time.Millisecond)},
		{"now 1ms later", prev, prev.Add(time.Millisecond), prev.Add(time.Millisecond)},
		{"now later, truncated", prev, prev.Add(2*time.Second + 2700*time.Microsecond), prev.Add(2*time.Second + 2*time.Millisecond)},
		{"now later, other zone", prev, prev.Add(time.Hour).In(time.FixedZone("Y", 5*3600)), prev.Add(time.Hour)},
		{"first write", time.Time{}, prev.Add(123456789), prev.Add(123 * time.Millisecond)},
		{"prev off the millisecond", prev.Add(300 * time.Microsecond), prev, prev.Add(time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := job.NextUpdate(tt.prev, tt.now)
			if !got.Equal(tt.want) {
				t.Errorf("NextUpdate(%v, %v) = %v, want %v", tt.prev, tt.now, got, tt.want)
			}
			if !got.After(tt.prev) {
				t.Errorf("NextUpdate = %v, not after prev %v", got, tt.prev)
			}
			if !got.Equal(job.Millis(got)) {
				t.Errorf("NextUpdate = %v, not on a millisecond", got)
			}
		})
	}
	// A run of writes with a clock stuck in the past stays strictly monotonic.
	u := t0
	for i := range 5 {
		next := job.NextUpdate(u, t0.Add(-time.Hour))
		if !next.Equal(t0.Add(time.Duration(i+1) * time.Millisecond)) {
			t.Fatalf("write %d: %v", i, next)
		}
		u = next
	}
}

func TestRetentionExpiresAt(t *testing.T) {
	r := job.Retention{Succeeded: 7 * 24 * time.Hour, Failed: 90 * 24 * time.Hour}
	now := t0.Add(1500 * time.Microsecond)
	tests := []struct {
		s    job.State
		want time.Time
	}{
		{job.Succeeded, t0.Add(7*24*time.Hour + time.Millisecond)},
		{job.Failed, t0.Add(90*24*time.Hour + time.Millisecond)},
		{job.Abandoned, t0.Add(90*24*time.Hour + time.Millisecond)},
	}
	for _, tt := range tests {
		if got := r.ExpiresAt(tt.s, now); !got.Equal(tt.want) {
			t.Errorf("ExpiresAt(%s) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestJobHelpers(t *testing.T) {
	tests := []struct {
		name      string
		j         job.Job
		remaining job.Nanocents
		live      bool
	}{
		{"fresh", queued(), job.Cents(50), false},
		{"partly spent, one hold", with(running(), func(j *job.Job) { j.Cost = job.Cents(20) }), job.Cents(29), true},
		{"overspent", with(running(), func(j *job.Job) { j.Cost = job.Cents(51) }), 0, true},
		{"held beyond the budget", with(running(), func(j *job.Job) { j.Cost, j.Held = job.Cents(20), job.Cents(31) }), 0, true},
		{"lease at now is not live", with(running(), func(j *job.Job) { j.LeaseUntil = t0 }), job.Cents(49), false},
		{"queued with a stale lease is not live", with(queued(), func(j *job.Job) { j.LeaseUntil = t0.Add(time.Hour) }), job.Cents(50), false},
	}
	for _, tt := range tests {
		if got := tt.j.Remaining(); got != tt.remaining {
			t.Errorf("%s: Remaining = %s, want %s", tt.name, got, tt.remaining)
		}
		if got := tt.j.LeaseLive(t0); got != tt.live {
			t.Errorf("%s: LeaseLive = %v, want %v", tt.name, got, tt.live)
		}
	}
	// Settled: what the holder leaves once its attempt is paid and its hold
	// returned; a dead attempt's hold still counts.
	held := with(running(), func(j *job.Job) { j.Cost, j.Held = job.Cents(10), job.Cents(3) })
	for cost, want := range map[job.Nanocents]job.Nanocents{0: job.Cents(38), job.Cents(8): job.Cents(30), job.Cents(40): 0} {
		if got := held.LeftAfter(cost); got != want {
			t.Errorf("LeftAfter(%s) = %s, want %s", cost, got, want)
		}
	}
	if got := job.Millis(time.Date(2025, 1, 1, 0, 0, 0, 999_999_999, time.FixedZone("Z", 3600))); !got.Equal(time.Date(2024, 12, 31, 23, 0, 0, 999_000_000, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("Millis = %v", got)
	}
}
