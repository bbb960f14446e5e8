package storetest

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The effect of each applied transition on the whole record.

// attempt is a record held by "me" whose earlier attempt failed: it carries
// cost, a saving, run time, progress, an error class and a detail that
// each effect must keep or clear as documented, and the hold of me's
// claim.
func attempt(now time.Time) func(*job.Job) {
	return func(j *job.Job) {
		running("me", now.Add(time.Minute))(j)
		j.Attempts, j.Cost, j.Saved, j.Progress, j.RunTime = 2, 4, 3, 0.6, 700*time.Millisecond
		j.ErrorClass, j.ErrorDetail = job.RateLimited, "http 429"
	}
}

// ran is how long the attempts the cases finish ran.
const ran = 1500 * time.Millisecond

func heartbeat(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name           string
		progress, want float64
	}{
		{"progress kept", 0.25, 0.25},
		{"progress above 1 clamped", 1.5, 1},
		{"negative progress clamped", -0.5, 0},
		{"NaN progress is 0", math.NaN(), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, attempt(now))
			got, err := s.store.Heartbeat(t.Context(), job.Heartbeat{ID: j.ID, Owner: "me", Now: now, LeaseUntil: now.Add(10 * time.Minute), Progress: c.progress})
			want := j
			want.LeaseUntil, want.Progress, want.Version, want.UpdatedAt = now.Add(10*time.Minute), c.want, j.Version+1, now
			s.applied(t, "heartbeat", got, err, want)
		})
	}
}

// holdMore: the owner of a running attempt raises its hold while the
// budget left covers the raise; nobody else may, and a raise the budget
// cannot cover is refused.
func holdMore(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name   string
		owner  string
		amount job.Nanocents
		ok     bool
	}{
		{"the owner, within the budget", "me", 1000, true},
		{"the owner, exactly the budget left", "me", job.Cents(5) - 7 - reserve, true},
		{"the owner, beyond the budget left", "me", job.Cents(5) - 7 - reserve + 1, false},
		{"another worker", "other", 1, false},
		{"nobody", "", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, attempt(now), func(j *job.Job) { j.Cost = 7 })
			got, err := s.store.HoldMore(t.Context(), job.HoldMore{ID: j.ID, Owner: c.owner, Now: now, Amount: c.amount})
			if !c.ok {
				s.refused(t, "hold more", err, j)
				return
			}
			want := j
			want.Held, want.Version, want.UpdatedAt = j.Held+c.amount, j.Version+1, now
			s.applied(t, "hold more", got, err, want)
			if got.Remaining() != j.Remaining()-c.amount {
				t.Fatalf("remaining %d, want %d", got.Remaining(), j.Remaining()-c.amount)
			}
		})
	}
	// A raise sent again (its answer lost, the SDK retrying) is applied
	// once; a raise to a new total is a new raise.
	t.Run("a repeated raise counts once", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		raise := job.HoldMore{ID: j.ID, Owner: "me", Now: now, Amount: 40, Total: j.Held + 40}
		first, err := s.store.HoldMore(t.Context(), raise)
		if err != nil {
			t.Fatal(err)
		}
		raise.Now = now.Add(time.Second)
		again, err := s.store.HoldMore(t.Context(), raise)
		s.applied(t, "the repeated raise", again, err, first)
		next, err := s.store.HoldMore(t.Context(), job.HoldMore{ID: j.ID, Owner: "me", Now: now.Add(2 * time.Second), Amount: 40, Total: j.Held + 80})
		if err != nil || next.Held != j.Held+80 {
			t.Fatalf("a raise to a new total: %+v %v, want held %d", next, err, j.Held+80)
		}
	})
	// The attempt's finish returns the whole hold, the raise included.
	t.Run("the finish returns it", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		if _, err := s.store.HoldMore(t.Context(), job.HoldMore{ID: j.ID, Owner: "me", Now: now, Amount: 40}); err != nil {
			t.Fatal(err)
		}
		got, err := s.store.Release(t.Context(), job.Release{ID: j.ID, Owner: "me", Now: now.Add(time.Second), Settlement: job.Settlement{Cost: 30, Held: reserve + 40}, Class: job.Timeout})
		if err != nil || got.Held != j.Held-reserve || got.Cost != j.Cost+30 {
			t.Fatalf("release: %+v %v, want the whole hold returned and 30 more cost", got, err)
		}
	})
}

func succeed(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name    string
		model   string
		lane    job.Lane
		saved   job.Nanocents // by this attempt; the earlier one saved 3
		want    job.Nanocents // the record's saving after it
		expires time.Time
		mut     func(*job.Job)
	}{
		{"result, model, lane, class cleared", "gpt-x", job.Flex, 5, 8, keep, nil},
		{"a premium lane's negative saving subtracts", "gpt-x", job.Priority, -7, -4, keep, nil},
		{"no model named clears a stale one", "", job.Flex, 0, 3, keep, func(j *job.Job) { j.ResultModel = "stale" }},
		{"no lane named clears a stale one", "gpt-x", "", 0, 3, keep, func(j *job.Job) { j.ResultLane = job.Priority }},
		{"no expiry: kept forever", "gpt-x", job.Standard, 0, 3, time.Time{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, attempt(now), c.mut)
			got, err := s.store.Succeed(t.Context(), job.Succeed{ID: j.ID, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 6, Held: reserve, Ran: ran, Saved: c.saved},
				Result: json.RawMessage(`{"output":"x"}`), Model: c.model, Lane: c.lane, ExpiresAt: c.expires})
			want := j
			want.State, want.Result, want.ResultModel, want.ResultLane = job.Succeeded, json.RawMessage(`{"output":"x"}`), c.model, c.lane
			want.ErrorClass, want.ErrorDetail = "", ""
			want.LeaseOwner, want.LeaseUntil = "", time.Time{}
			want.Cost, want.Saved, want.Held, want.RunTime, want.Progress, want.ExpiresAt = 10, c.want, 0, 2200*time.Millisecond, 1, c.expires
			want.Version, want.UpdatedAt = j.Version+1, now
			s.applied(t, "succeed", got, err, want)
		})
	}
}

func release(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name   string
		class  job.ErrorClass
		detail string
	}{
		{"class and detail set", job.Overloaded, "http 529"},
		{"no detail clears the old one", job.Timeout, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, attempt(now))
			// A priority lane's attempt: its negative saving subtracts.
			got, err := s.store.Release(t.Context(), job.Release{ID: j.ID, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 6, Held: reserve, Ran: ran, Saved: -5}, Class: c.class, Detail: c.detail})
			want := j
			want.State, want.ErrorClass, want.ErrorDetail = job.Queued, c.class, c.detail
			want.LeaseOwner, want.LeaseUntil = "", time.Time{}
			want.Cost, want.Saved, want.Held, want.RunTime, want.Version, want.UpdatedAt = 10, -2, 0, 2200*time.Millisecond, j.Version+1, now
			s.applied(t, "release", got, err, want)
		})
	}
}

// deferred: a claimed job handed back before its attempt paid anything
// (job.Defer) is queued again with its attempt uncounted, its hold
// returned, its cost, run time and progress as they were, a backoff and
// the class of the wait (rate_limited unless the defer names another); a
// second defer, like a stranger's, is refused and changes nothing.
func deferred(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	j := s.create(t, attempt(now))
	d := job.Defer{ID: j.ID, Owner: "me", Now: now, Held: reserve, Detail: "provider bucket empty", NotBefore: now.Add(3 * time.Second)}
	got, err := s.store.Defer(t.Context(), d)
	want := j
	want.State, want.ErrorClass, want.ErrorDetail, want.NotBefore = job.Queued, job.RateLimited, "provider bucket empty", now.Add(3*time.Second)
	want.LeaseOwner, want.LeaseUntil = "", time.Time{}
	want.Attempts, want.Held, want.Version, want.UpdatedAt = 1, 0, j.Version+1, now
	s.applied(t, "defer", got, err, want)
	d.Now = now.Add(time.Millisecond)
	_, err = s.store.Defer(t.Context(), d)
	s.refused(t, "a second defer", err, want)
	stranger := s.create(t, attempt(now))
	_, err = s.store.Defer(t.Context(), job.Defer{ID: stranger.ID, Owner: "not-me", Now: now, Held: reserve})
	s.refused(t, "a stranger's defer", err, stranger)
	if _, err := s.store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "next", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)}); job.ErrorCode(err) != job.CodeConflict {
		t.Errorf("a claim during the defer's backoff: %v, want a conflict", err)
	}
	// A lane's capacity refusal defers too, and says so.
	k := s.create(t, attempt(now))
	got, err = s.store.Defer(t.Context(), job.Defer{ID: k.ID, Owner: "me", Now: now, Held: reserve, Class: job.CapacityUnavailable})
	want = k
	want.State, want.ErrorClass, want.ErrorDetail = job.Queued, job.CapacityUnavailable, ""
	want.LeaseOwner, want.LeaseUntil = "", time.Time{}
	want.Attempts, want.Held, want.Version, want.UpdatedAt = 1, 0, k.Version+1, now
	s.applied(t, "a capacity defer", got, err, want)
}

func endOwned(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		class job.ErrorClass
		state job.State
	}{
		{job.ContentFiltered, job.Failed},
		{job.Timeout, job.Failed},
		{job.DeadLettered, job.Failed},
		{job.DeadlineExceeded, job.Abandoned},
		{job.BudgetExhausted, job.Abandoned},
		{job.SpendLimit, job.Abandoned},
		{job.Cancelled, job.Abandoned},
	} {
		t.Run(string(c.class), func(t *testing.T) {
			t.Parallel()
			j := s.create(t, attempt(now))
			got, err := s.store.End(t.Context(), job.End{ID: j.ID, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 6, Held: reserve, Ran: ran, Saved: 4}, Class: c.class, Detail: "why", ExpiresAt: keep})
			want := j
			want.State, want.ErrorClass, want.ErrorDetail = c.state, c.class, "why"
			want.LeaseOwner, want.LeaseUntil = "", time.Time{}
			want.Cost, want.Saved, want.Held, want.RunTime = 10, 7, 0, 2200*time.Millisecond
			want.ExpiresAt, want.Version, want.UpdatedAt = keep, j.Version+1, now
			s.applied(t, "end", got, err, want)
		})
	}
	t.Run("end of a queued job names an owner", func(t *testing.T) {
		t.Parallel()
		j := s.create(t)
		_, err := s.store.End(t.Context(), job.End{ID: j.ID, Owner: "me", Now: now, Class: job.Auth, ExpiresAt: keep})
		s.refused(t, "end", err, j)
	})
}

// endUnowned: with no owner, End takes only a job nobody holds.
func endUnowned(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
		ok   bool
	}{
		{"queued", nil, true},
		{"queued after a failed attempt", func(j *job.Job) { j.Attempts, j.ErrorClass, j.ErrorDetail = 3, job.RateLimited, "old" }, true},
		// A dead attempt is written off first (job.WriteOff): its hold
		// becomes cost before the job can end.
		{"running, lease_until is now", running("old", now), false},
		{"running, lease long expired", running("old", now.Add(-time.Hour)), false},
		{"running, lease live one more millisecond", running("old", now.Add(time.Millisecond)), false},
		{"succeeded", ended(job.Succeeded, ""), false},
		{"failed", ended(job.Failed, job.Auth), false},
		{"abandoned", ended(job.Abandoned, job.Cancelled), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			got, err := s.store.End(t.Context(), job.End{ID: j.ID, Now: now, Class: job.DeadlineExceeded, Detail: "late", ExpiresAt: keep})
			if !c.ok {
				s.refused(t, "end", err, j)
				return
			}
			want := j
			want.State, want.ErrorClass, want.ErrorDetail = job.Abandoned, job.DeadlineExceeded, "late"
			want.LeaseOwner, want.LeaseUntil = "", time.Time{}
			want.ExpiresAt, want.Version, want.UpdatedAt = keep, j.Version+1, now
			s.applied(t, "end", got, err, want)
		})
	}
	// An unowned end on evidence older than the job's last replay is
	// refused: the replay already answered it.
	since := now.Add(-time.Minute)
	for _, c := range []struct {
		name     string
		replayed time.Time
		ok       bool
	}{
		{"never replayed", time.Time{}, true},
		{"replayed before the evidence", since.Add(-time.Millisecond), true},
		{"replayed at the evidence", since, false},
		{"replayed after the evidence", since.Add(time.Second), false},
	} {
		t.Run("not replayed since/"+c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, func(j *job.Job) {
				if !c.replayed.IsZero() {
					j.ReplayedAt, j.Replays = c.replayed, 1
				}
			})
			got, err := s.store.End(t.Context(), job.End{ID: j.ID, Now: now, Class: job.DeadLettered, ExpiresAt: keep, NotReplayedSince: since})
			if !c.ok {
				s.refused(t, "end", err, j)
				return
			}
			want := j
			want.State, want.ErrorClass = job.Failed, job.DeadLettered
			want.ExpiresAt, want.Version, want.UpdatedAt = keep, j.Version+1, now
			s.applied(t, "end", got, err, want)
		})
	}
}

// cancel: the owning tenant abandons a live job; a finished one is a
// Conflict; another tenant's job does not exist.
func cancel(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	for _, c := range []struct {
		name   string
		mut    func(*job.Job)
		tenant string
		ok     bool
	}{
		{"queued", func(j *job.Job) { j.ErrorClass, j.ErrorDetail = job.RateLimited, "http 429" }, tenant, true},
		{"running", attempt(now), tenant, true},
		{"succeeded", ended(job.Succeeded, ""), tenant, false},
		{"failed", ended(job.Failed, job.Auth), tenant, false},
		{"abandoned", ended(job.Abandoned, job.Cancelled), tenant, false},
		{"another tenant's queued job", nil, other, false},
		{"another tenant's running job", attempt(now), other, false},
		{"another tenant's succeeded job", ended(job.Succeeded, ""), other, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			got, err := s.store.Cancel(t.Context(), job.Cancel{ID: j.ID, Tenant: c.tenant, Now: now, ExpiresAt: keep})
			switch {
			case c.tenant != j.Tenant:
				notFound(t, "cancel", err)
				same(t, "stored", s.get(t, j.ID), j)
			case !c.ok:
				s.refused(t, "cancel", err, j)
			default:
				want := j
				// A running attempt keeps its lease and hold until it settles.
				want.State, want.ErrorClass, want.ErrorDetail = job.Abandoned, job.Cancelled, ""
				want.ExpiresAt, want.Version, want.UpdatedAt = keep, j.Version+1, now
				s.applied(t, "cancel", got, err, want)
				// The running attempt notices at its next heartbeat.
				_, err = s.store.Heartbeat(t.Context(), job.Heartbeat{ID: j.ID, Owner: "me", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour)})
				s.refused(t, "heartbeat after the cancel", err, want)
			}
		})
	}
}
