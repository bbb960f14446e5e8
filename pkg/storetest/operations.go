package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The operator's transitions (replay, nudge) and the queries (a tenant's
// list, failures by class and time, unfinished jobs, recent jobs).

// replay: a failed job goes back to queued with fresh attempts and a fresh
// deadline, leaves the failure index, and is claimable again; anything
// else is refused untouched.
func replay(t *testing.T, s *suite) {
	now := base.Add(time.Hour + time.Minute) // past every record's deadline
	fresh := now.Add(time.Hour)
	failed := func(j *job.Job) {
		j.State, j.Attempts, j.Cost, j.ErrorClass, j.ErrorDetail, j.ExpiresAt = job.Failed, 3, 40, job.Overloaded, "http 529", keep
	}
	for _, c := range []struct {
		name     string
		mut      func(*job.Job)
		attempts int
		deadline time.Time
		ok       bool
	}{
		{"failed", failed, 2, fresh, true},
		{"failed twice before", func(j *job.Job) { failed(j); j.Replays = 2 }, 1, fresh, true},
		{"failed, exactly one reserve left", func(j *job.Job) { failed(j); j.Reserve, j.Cost = 11, j.Budget-11 }, 1, fresh, true},
		{"failed, less than one reserve left", func(j *job.Job) { failed(j); j.Reserve, j.Cost = 11, j.Budget-10 }, 1, fresh, false},
		{"failed, budget spent", func(j *job.Job) { failed(j); j.Reserve, j.Cost = 0, j.Budget }, 1, fresh, false},
		{"failed, a dead attempt's hold leaves too little", func(j *job.Job) { failed(j); j.Reserve, j.Held, j.Cost = 11, j.Budget-20, 10 }, 1, fresh, false},
		{"failed, no fresh attempts", failed, 0, fresh, false},
		{"failed, deadline not in the future", failed, 1, now, false},
		{"succeeded", ended(job.Succeeded, ""), 1, fresh, false},
		{"abandoned (cancelled)", ended(job.Abandoned, job.Cancelled), 1, fresh, false},
		{"queued", nil, 1, fresh, false},
		{"running", running("w", now.Add(time.Minute)), 1, fresh, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			got, err := s.store.Replay(t.Context(), job.Replay{ID: j.ID, Now: now, Attempts: c.attempts, Deadline: c.deadline, ExpiresAt: keep})
			if !c.ok {
				s.refused(t, "replay", err, j)
				return
			}
			want := j
			want.State, want.MaxAttempts, want.Deadline = job.Queued, j.Attempts+c.attempts, c.deadline
			want.Replays, want.ReplayedAt, want.ExpiresAt = j.Replays+1, now, keep
			want.Version, want.UpdatedAt = j.Version+1, now
			s.applied(t, "replay", got, err, want)
			claimed := s.claim(t, j.ID, "after-replay", now.Add(time.Second))
			if claimed.Attempts != j.Attempts+1 {
				t.Fatalf("claim after the replay: attempts %d, want %d", claimed.Attempts, j.Attempts+1)
			}
		})
	}
}

// nudge: the reconciler may touch a job untouched (queued) or abandoned by
// its worker (running, lease expired) since Stale, and nothing else.
func nudge(t *testing.T, s *suite) {
	now := base.Add(20 * time.Minute)
	stale := now.Add(-10 * time.Minute) // base is well before it
	t.Run("none leaves a stale queued job alone", func(t *testing.T) {
		t.Parallel()
		q := s.create(t)
		_, err := s.store.Nudge(t.Context(), job.Nudge{ID: q.ID, Now: now, Stale: stale, Queued: job.NudgeNone})
		s.refused(t, "nudge", err, q)
		r := s.create(t, running("dead", stale.Add(-time.Second)))
		got, err := s.store.Nudge(t.Context(), job.Nudge{ID: r.ID, Now: now, Stale: stale, Queued: job.NudgeNone})
		want := r
		want.Nudges, want.Version, want.UpdatedAt = 1, r.Version+1, now
		s.applied(t, "nudge", got, err, want)
	})
	t.Run("first touches a stale queued job only once", func(t *testing.T) {
		t.Parallel()
		q := s.create(t)
		got, err := s.store.Nudge(t.Context(), job.Nudge{ID: q.ID, Now: stale, Stale: stale, Queued: job.NudgeFirst})
		want := q
		want.Nudges, want.Version, want.UpdatedAt = 1, q.Version+1, stale
		s.applied(t, "first nudge", got, err, want)
		// Stale again later, but nudged once already: left alone under a
		// backlog, touched when any stale job may be.
		later, laterStale := now.Add(time.Hour), now.Add(50*time.Minute)
		_, err = s.store.Nudge(t.Context(), job.Nudge{ID: q.ID, Now: later, Stale: laterStale, Queued: job.NudgeFirst})
		s.refused(t, "second first-only nudge", err, want)
		got, err = s.store.Nudge(t.Context(), job.Nudge{ID: q.ID, Now: later, Stale: laterStale, Queued: job.NudgeAny})
		want.Nudges, want.Version, want.UpdatedAt = 2, want.Version+1, later
		s.applied(t, "any nudge", got, err, want)
		r := s.create(t, running("dead", stale.Add(-time.Second)), func(j *job.Job) { j.Nudges = 3 })
		got, err = s.store.Nudge(t.Context(), job.Nudge{ID: r.ID, Now: now, Stale: stale, Queued: job.NudgeFirst})
		want = r
		want.Nudges, want.Version, want.UpdatedAt = 4, r.Version+1, now
		s.applied(t, "first nudge of a dead worker's job", got, err, want)
	})
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
		ok   bool
	}{
		{"queued, untouched since before stale", nil, true},
		{"queued, touched exactly at stale", func(j *job.Job) { j.UpdatedAt = stale }, true},
		{"queued, touched after stale", func(j *job.Job) { j.UpdatedAt = stale.Add(time.Millisecond) }, false},
		{"queued, backoff ended before stale", func(j *job.Job) { j.NotBefore = stale.Add(-time.Minute) }, true},
		{"queued, backoff ends after stale", func(j *job.Job) { j.NotBefore = stale.Add(time.Second) }, false},
		{"running, lease expired before stale", running("dead", stale.Add(-time.Second)), true},
		{"running, lease expired, but touched after stale", func(j *job.Job) {
			running("dead", stale.Add(-time.Second))(j)
			j.UpdatedAt = stale.Add(time.Second)
		}, false},
		{"running, lease expired after stale", running("slow", stale.Add(time.Second)), false},
		{"running, lease live", running("busy", now.Add(time.Minute)), false},
		{"succeeded", ended(job.Succeeded, ""), false},
		{"failed", ended(job.Failed, job.Auth), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			got, err := s.store.Nudge(t.Context(), job.Nudge{ID: j.ID, Now: now, Stale: stale})
			if !c.ok {
				s.refused(t, "nudge", err, j)
				return
			}
			want := j
			want.Nudges, want.Version, want.UpdatedAt = j.Nudges+1, j.Version+1, now
			s.applied(t, "nudge", got, err, want)
			_, err = s.store.Nudge(t.Context(), job.Nudge{ID: j.ID, Now: now.Add(time.Second), Stale: stale})
			s.refused(t, "a second nudge in the same period", err, want)
		})
	}
}

// list: a tenant's jobs newest first, over pages that neither repeat nor
// skip, filtered by state and class, from Since on; never another
// tenant's; a cursor that is not one is invalid_request.
func list(t *testing.T, s *suite) {
	l := newListed(t, s)
	l.filters(t)
	t.Run("a page holds the summary", l.summary)
	t.Run("another tenant sees none", func(t *testing.T) {
		if ids := l.all(t, job.ListQuery{Tenant: l.tenant + "-nobody", Limit: 5}); len(ids) != 0 {
			t.Fatalf("ids %v", ids)
		}
	})
	t.Run("a bad cursor is invalid_request", l.badCursors)
}

// listed is what list's subtests read: a tenant of their own, so no other
// case's jobs show in its pages, and its jobs as created.
type listed struct {
	s      *suite
	tenant string
	mine   []job.Job
}

// newListed creates seven jobs of a new tenant, every third failed
// overloaded, a second apart, and one job of another tenant that must
// never show.
func newListed(t *testing.T, s *suite) listed {
	l := listed{s: s, tenant: fmt.Sprint("tenant-list-", s.seq.Add(1))}
	for i := range 7 {
		at := base.Add(time.Duration(i) * time.Second)
		mut := func(j *job.Job) { j.Tenant, j.CreatedAt, j.UpdatedAt = l.tenant, at, at }
		if i%3 == 0 {
			l.mine = append(l.mine, s.create(t, mut, ended(job.Failed, job.Overloaded)))
		} else {
			l.mine = append(l.mine, s.create(t, mut))
		}
	}
	// No two of them share a creation time: kumo orders index ties
	// differently from one query to the next (real DynamoDB and the memory
	// store order them by id), so a tie would make pages flaky on kumo.
	s.create(t, func(j *job.Job) { j.Tenant = l.tenant + "-other" })
	return l
}

// all follows q's pages to the end, holding each page to its limit and to
// q's tenant, and returns the ids in page order.
func (l listed) all(t *testing.T, q job.ListQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("pages never end")
		}
		p, err := l.s.store.List(t.Context(), q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		if len(p.Jobs) > job.ClampLimit(q.Limit) {
			t.Fatalf("page of %d, limit %d", len(p.Jobs), q.Limit)
		}
		for _, j := range p.Jobs {
			if j.Tenant != "" && j.Tenant != q.Tenant {
				t.Fatalf("another tenant's job %s", j.ID)
			}
			ids = append(ids, j.ID)
		}
		if p.Next == "" {
			return ids
		}
		q.Cursor = p.Next
	}
}

// want is the ids of the jobs keep keeps, newest first (ties by id,
// highest first), written out here rather than asked of the store.
func (l listed) want(keep func(job.Job) bool) []string {
	var ids []job.Job
	for _, j := range l.mine {
		if keep(j) {
			ids = append(ids, j)
		}
	}
	slices.SortFunc(ids, func(a, b job.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return 1
		}
		return -1
	})
	out := make([]string, len(ids))
	for i, j := range ids {
		out[i] = j.ID
	}
	return out
}

// filters pages through each filter at a limit that splits the answer, so
// a cursor that repeated or skipped a job would show.
func (l listed) filters(t *testing.T) {
	for _, c := range []struct {
		name string
		q    job.ListQuery
		keep func(job.Job) bool
	}{
		{"everything, one page", job.ListQuery{Tenant: l.tenant, Limit: 100}, func(job.Job) bool { return true }},
		{"everything, pages of 3", job.ListQuery{Tenant: l.tenant, Limit: 3}, func(job.Job) bool { return true }},
		{"everything, pages of 1", job.ListQuery{Tenant: l.tenant, Limit: 1}, func(job.Job) bool { return true }},
		{"failed only, pages of 2", job.ListQuery{Tenant: l.tenant, State: job.Failed, Limit: 2}, func(j job.Job) bool { return j.State == job.Failed }},
		{"by class", job.ListQuery{Tenant: l.tenant, Class: job.Overloaded, Limit: 2}, func(j job.Job) bool { return j.ErrorClass == job.Overloaded }},
		{"queued since 4s", job.ListQuery{Tenant: l.tenant, State: job.Queued, Since: base.Add(4 * time.Second), Limit: 2}, func(j job.Job) bool {
			return j.State == job.Queued && !j.CreatedAt.Before(base.Add(4*time.Second))
		}},
		{"nothing matches", job.ListQuery{Tenant: l.tenant, Class: job.Auth, Limit: 2}, func(job.Job) bool { return false }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, w := l.all(t, c.q), l.want(c.keep); !slices.Equal(got, w) {
				t.Fatalf("ids\n got %v\nwant %v", got, w)
			}
		})
	}
}

// summary: a page's jobs carry the fields a listing shows, not only ids.
func (l listed) summary(t *testing.T) {
	p, err := l.s.store.List(t.Context(), job.ListQuery{Tenant: l.tenant, State: job.Failed, Limit: 1})
	if err != nil || len(p.Jobs) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	got, w := p.Jobs[0], l.mine[6]
	if got.ID != w.ID || got.State != job.Failed || got.ErrorClass != job.Overloaded || got.RequestKey != w.RequestKey ||
		got.Model != w.Model || got.Cost != w.Cost || got.Budget != w.Budget || got.Attempts != w.Attempts ||
		!got.CreatedAt.Equal(w.CreatedAt) || !got.Deadline.Equal(w.Deadline) || got.InputHash != w.InputHash {
		t.Fatalf("summary %+v\nof %+v", got, w)
	}
}

// badCursors: a cursor comes back from the client, so one the store did
// not make for this query is refused, naming the field: garbage, base64
// of no position, a position no job holds, one from before Since.
func (l listed) badCursors(t *testing.T) {
	for _, q := range []job.ListQuery{{Cursor: "!!"}, {Cursor: "bm90LWEtY3Vyc29y"}, {Cursor: job.Position{CreatedAt: base, ID: "nope"}.Cursor()},
		{Cursor: job.Position{CreatedAt: base, ID: l.mine[0].ID}.Cursor(), Since: base.Add(time.Second)}} {
		q.Tenant = l.tenant
		c := q.Cursor
		_, err := l.s.store.List(t.Context(), q)
		var je *job.Error
		if !errors.As(err, &je) || je.Code != job.CodeInvalidRequest || je.Field != "cursor" {
			t.Fatalf("cursor %q: %v", c, err)
		}
	}
}

// failures: every failed and abandoned job that ended in the window, with
// its cost and input hash (and what it saved, when asked), and nothing
// that did not fail or ended outside.
func failures(t *testing.T, s *suite) {
	ctx := t.Context()
	start := base.Add(time.Hour) // a window no other case ends jobs in
	var want []job.Failure
	end := func(at time.Time, class job.ErrorClass, cost job.Nanocents, hash string, inWindow bool) {
		j := s.create(t, func(j *job.Job) { j.InputHash = hash; j.Deadline = base.Add(48 * time.Hour) })
		s.claim(t, j.ID, "w", at.Add(-time.Second))
		// Each saved a fifth of its cost (its calls ran in a cheaper lane).
		got, err := s.store.End(ctx, job.End{ID: j.ID, Owner: "w", Now: at, Settlement: job.Settlement{Cost: cost, Saved: cost / 5},
			Class: class, ExpiresAt: keep})
		if err != nil {
			t.Fatal(err)
		}
		if inWindow {
			want = append(want, job.Failure{ID: j.ID, Tenant: j.Tenant, Model: j.Model, InputHash: hash, State: class.FinalState(),
				Class: class, Cost: cost, Attempts: got.Attempts, EndedAt: at})
		}
	}
	end(start, job.Overloaded, 10, "sha256:a", true)
	end(start.Add(time.Minute), job.Overloaded, 15, "sha256:a", true)
	end(start.Add(2*time.Minute), job.ContentFiltered, 7, "sha256:b", true)
	end(start.Add(3*time.Minute), job.DeadlineExceeded, 0, "sha256:c", true)
	end(start.Add(-time.Millisecond), job.Overloaded, 1000, "sha256:a", false)
	end(start.Add(10*time.Minute), job.Overloaded, 1000, "sha256:a", false) // Until is exclusive
	ok := s.create(t, func(j *job.Job) { j.Deadline = base.Add(48 * time.Hour) })
	s.claim(t, ok.ID, "w", start)
	if _, err := s.store.Succeed(ctx, job.Succeed{ID: ok.ID, Owner: "w", Now: start.Add(time.Second), Settlement: job.Settlement{Cost: 99}, ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	collect := func(q job.FailureQuery) []job.Failure {
		var got []job.Failure
		if err := s.store.Failures(ctx, q, func(f job.Failure) error { got = append(got, f); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b job.Failure) int { return a.EndedAt.Compare(b.EndedAt) })
		return got
	}
	window := job.FailureQuery{Since: start, Until: start.Add(10 * time.Minute)}
	if got := collect(window); !slices.Equal(got, want) {
		t.Fatalf("failures\n got %+v\nwant %+v", got, want)
	}
	window.Classes = []job.ErrorClass{job.Overloaded}
	if got := collect(window); !slices.Equal(got, want[:2]) {
		t.Fatalf("overloaded only\n got %+v\nwant %+v", got, want[:2])
	}
	window.Classes, window.Saved = nil, true
	for i := range want {
		want[i].Saved = want[i].Cost / 5
	}
	if got := collect(window); !slices.Equal(got, want) || want[0].Saved == 0 {
		t.Fatalf("failures with what they saved\n got %+v\nwant %+v", got, want)
	}
	window.InputHash = "sha256:a"
	if got := collect(window); !slices.Equal(got, want[:2]) {
		t.Fatalf("one input's failures\n got %+v\nwant %+v", got, want[:2])
	}
	stop := errors.New("enough")
	if err := s.store.Failures(ctx, window, func(job.Failure) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("the callback's error must stop the query and come back: %v", err)
	}
}

// unfinished: the ids of queued and running jobs created before a time,
// never a finished one.
func unfinished(t *testing.T, s *suite) {
	ctx := t.Context()
	at := func(d time.Duration) func(*job.Job) {
		return func(j *job.Job) { j.CreatedAt, j.UpdatedAt = base.Add(-48*time.Hour+d), base.Add(-48*time.Hour+d) }
	}
	before := base.Add(-47 * time.Hour) // a window no other case creates jobs in
	q := s.create(t, at(0))
	r := s.create(t, at(time.Minute), running("w", base))
	released := s.create(t, at(2*time.Minute))
	s.claim(t, released.ID, "w", base)
	if _, err := s.store.Release(ctx, job.Release{ID: released.ID, Owner: "w", Now: base.Add(time.Second), Class: job.Timeout}); err != nil {
		t.Fatal(err)
	}
	done := s.create(t, at(3*time.Minute))
	s.claim(t, done.ID, "w", base)
	if _, err := s.store.Succeed(ctx, job.Succeed{ID: done.ID, Owner: "w", Now: base.Add(time.Second), ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	cancelled := s.create(t, at(4*time.Minute))
	if _, err := s.store.Cancel(ctx, job.Cancel{ID: cancelled.ID, Tenant: tenant, Now: base, ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	s.create(t, func(j *job.Job) { j.CreatedAt = before }) // not before: excluded
	var got []string
	if err := s.store.Unfinished(ctx, before, func(id string) error { got = append(got, id); return nil }); err != nil {
		t.Fatal(err)
	}
	// Oldest first, across every shard of the index: the reconciler's
	// bound on how long a lost message waits depends on it.
	want := []string{q.ID, r.ID, released.ID}
	if !slices.Equal(got, want) {
		t.Fatalf("unfinished %v, want %v (oldest first)", got, want)
	}
}

// finished: a sample of one route's succeeded and failed jobs, with their
// attempts and run time, never another route's or an unfinished one.
func finished(t *testing.T, s *suite) {
	ctx := t.Context()
	model := fmt.Sprint("route-", s.seq.Add(1))
	on := func(j *job.Job) { j.Model = model }
	ok := s.create(t, on, ended(job.Succeeded, ""), func(j *job.Job) { j.Attempts, j.RunTime = 2, 1500*time.Millisecond })
	bad := s.create(t, on, ended(job.Failed, job.Overloaded), func(j *job.Job) {
		j.Attempts, j.RunTime = 3, 4200*time.Millisecond
		j.CreatedAt, j.UpdatedAt = j.CreatedAt.Add(time.Minute), j.UpdatedAt.Add(time.Minute) // the newest
	})
	s.create(t, on, ended(job.Abandoned, job.Cancelled))
	s.create(t, on)
	s.create(t, ended(job.Succeeded, ""))
	got := map[string]job.Job{}
	q := job.FinishedQuery{Model: model, Limit: 10, Since: ok.CreatedAt.Add(-time.Hour), Now: ok.CreatedAt}
	if err := s.store.Finished(ctx, q, func(j job.Job) error { got[j.ID] = j; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[ok.ID].RunTime != ok.RunTime || got[ok.ID].Attempts != 2 || got[bad.ID].RunTime != bad.RunTime ||
		got[bad.ID].State != job.Failed || got[ok.ID].Model != model {
		t.Fatalf("sample %+v", got)
	}
	q.Limit = 1
	var one []job.Job
	if err := s.store.Finished(ctx, q, func(j job.Job) error { one = append(one, j); return nil }); err != nil || len(one) != 1 {
		t.Fatalf("limit 1: %d jobs, %v", len(one), err)
	}
	// Newest first: the sample is the route's latest behaviour.
	newest := bad
	if one[0].ID != newest.ID {
		t.Fatalf("limit 1 gave %s (created %s), want the newest, %s (created %s)", one[0].ID, one[0].CreatedAt, newest.ID, newest.CreatedAt)
	}
	// Nothing created before Since.
	q.Since, q.Limit = newest.CreatedAt.Add(time.Millisecond), 10
	if err := s.store.Finished(ctx, q, func(j job.Job) error { return fmt.Errorf("%s is from before since", j.ID) }); err != nil {
		t.Fatal(err)
	}
}

// recent: every job created since the query's time, whatever its state,
// and every unfinished one whatever its age, as summaries (no input,
// metadata or result); never an old finished one.
func recent(t *testing.T, s *suite) {
	ctx := t.Context()
	since := base.Add(time.Hour)
	at := func(d time.Duration) func(*job.Job) {
		return func(j *job.Job) {
			j.CreatedAt, j.UpdatedAt, j.Deadline = since.Add(d), since.Add(d), since.Add(48*time.Hour)
		}
	}
	meta := func(j *job.Job) { j.Metadata = json.RawMessage(`{"ticket":"OPS-1"}`) }
	oldQueued := s.create(t, at(-time.Hour))
	oldRunning := s.create(t, at(-time.Minute))
	s.claim(t, oldRunning.ID, "w", since)
	s.create(t, at(-time.Millisecond), ended(job.Succeeded, ""))   // finished before since
	s.create(t, at(-time.Hour), ended(job.Failed, job.Overloaded)) // finished before since
	newOK := s.create(t, at(0), ended(job.Succeeded, ""), meta)
	newFailed := s.create(t, at(time.Minute), ended(job.Failed, job.Overloaded), func(j *job.Job) { j.Cost, j.Attempts = 42, 3 })
	newQueued := s.create(t, at(2*time.Minute), meta)

	got := map[string]job.Job{}
	if err := s.store.Recent(ctx, job.RecentQuery{Since: since}, func(j job.Job) error { got[j.ID] = j; return nil }); err != nil {
		t.Fatal(err)
	}
	running := s.get(t, oldRunning.ID)
	for _, want := range []job.Job{oldQueued, running, newOK, newFailed, newQueued} {
		g, ok := got[want.ID]
		if !ok {
			t.Errorf("recent lacks %s (%s, created %s)", want.ID, want.State, want.CreatedAt)
			continue
		}
		same(t, "recent "+want.ID, g, job.Summary(want))
	}
	if len(got) != 5 {
		t.Errorf("recent answered %d jobs, want 5: %v", len(got), slices.Collect(maps.Keys(got)))
	}
	stop := errors.New("enough")
	if err := s.store.Recent(ctx, job.RecentQuery{Since: since}, func(job.Job) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("the callback's error must stop the query and come back: %v", err)
	}
}
