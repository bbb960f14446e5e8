package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The batch lane on the job record (docs/decisions.md, "The batch lane's design"):
// a worker's attempt hands its job to a lane (Enlist), a collector puts
// it into a batch (Collect) and settles it under the batch's lease.

// lane is the batch lane every case enlists in unless it says otherwise.
var lane = job.LaneKey("default", 1)

// enlist: the attempt's owner hands a running job to the lane; the lease
// passes to the batch lane until Until, and the job carries its lane and
// enlist time. Nobody else may, nor for a job not running, nor into no
// lane, nor twice.
func enlist(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	until := now.Add(20 * time.Hour)
	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		got, err := s.store.Enlist(t.Context(), job.Enlist{ID: j.ID, Owner: "me", Now: now, Lane: lane, Until: until})
		want := j
		want.LeaseOwner, want.LeaseUntil = job.BatchOwner("me"), until
		want.Enlisted, want.EnlistedAt = lane, now
		want.Version, want.UpdatedAt = j.Version+1, now
		s.applied(t, "enlist", got, err, want)
	})
	cancelled := func(j *job.Job) { j.State, j.ErrorClass, j.ExpiresAt = job.Abandoned, job.Cancelled, keep }
	for _, c := range []struct {
		name  string
		mut   func(*job.Job)
		owner string
		lane  string
	}{
		{"another worker", attempt(now), "other", lane},
		{"nobody", attempt(now), "", lane},
		{"a queued job", nil, "me", lane},
		// Cancelled during the attempt: the lease is still on the record.
		{"a cancelled job", func(j *job.Job) { attempt(now)(j); cancelled(j) }, "me", lane},
		{"into no lane", attempt(now), "me", ""},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			_, err := s.store.Enlist(t.Context(), job.Enlist{ID: j.ID, Owner: c.owner, Now: now, Lane: c.lane, Until: until})
			s.refused(t, "enlist", err, j)
		})
	}
	t.Run("refused: twice", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now))
		e := job.Enlist{ID: j.ID, Owner: "me", Now: now, Lane: lane, Until: until}
		first, err := s.store.Enlist(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		e.Now, e.Lane = now.Add(time.Second), job.LaneKey("default", 2)
		_, err = s.store.Enlist(t.Context(), e)
		s.refused(t, "the second enlist", err, first)
	})
}

// enlisted creates a job of an attempt by "me" and enlists it in l at
// at, answering the record.
func (s *suite) enlisted(t *testing.T, l string, at time.Time) job.Job {
	t.Helper()
	j := s.create(t, attempt(base.Add(time.Minute)))
	got, err := s.store.Enlist(t.Context(), job.Enlist{ID: j.ID, Owner: "me", Now: at, Lane: l, Until: at.Add(20 * time.Hour)})
	if err != nil {
		t.Fatalf("enlist: %v", err)
	}
	return got
}

// collect: the batch lane's owner puts an enlisted job into a batch; the
// lease passes to the batch, and the job leaves its lane. A job never
// enlisted, or collected already (into any batch, by any owner), is
// refused, as are another owner and no batch.
func collect(t *testing.T, s *suite) {
	now := base.Add(2 * time.Minute)
	c := func(id, owner, batch string) job.Collect {
		return job.Collect{ID: id, Owner: owner, Now: now, Batch: batch}
	}
	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		j := s.enlisted(t, lane, base.Add(time.Minute))
		got, err := s.store.Collect(t.Context(), c(j.ID, job.BatchOwner("me"), "b1"))
		want := j
		want.Batch, want.LeaseOwner = "b1", job.BatchOwner("b1")
		want.Enlisted, want.EnlistedAt = "", time.Time{}
		want.Version, want.UpdatedAt = j.Version+1, now
		s.applied(t, "collect", got, err, want)
	})
	t.Run("refused: never enlisted", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, attempt(now), func(j *job.Job) { j.LeaseOwner = job.BatchOwner("me") })
		_, err := s.store.Collect(t.Context(), c(j.ID, job.BatchOwner("me"), "b1"))
		s.refused(t, "collect", err, j)
	})
	t.Run("refused: twice", func(t *testing.T) {
		t.Parallel()
		j := s.enlisted(t, lane, base.Add(time.Minute))
		first, err := s.store.Collect(t.Context(), c(j.ID, job.BatchOwner("me"), "b1"))
		if err != nil {
			t.Fatal(err)
		}
		for _, again := range []job.Collect{c(j.ID, job.BatchOwner("me"), "b2"), c(j.ID, job.BatchOwner("b1"), "b2"), c(j.ID, job.BatchOwner("b1"), "b1")} {
			_, err := s.store.Collect(t.Context(), again)
			s.refused(t, "collect by "+again.Owner+" into "+again.Batch, err, first)
		}
	})
	for _, r := range []struct{ name, owner, batch string }{
		{"the worker's own owner", "me", "b1"},
		{"another attempt's batch lane", job.BatchOwner("other"), "b1"},
		{"nobody", "", "b1"},
		{"into no batch", job.BatchOwner("me"), ""},
	} {
		t.Run("refused: "+r.name, func(t *testing.T) {
			t.Parallel()
			j := s.enlisted(t, lane, base.Add(time.Minute))
			_, err := s.store.Collect(t.Context(), c(j.ID, r.owner, r.batch))
			s.refused(t, "collect", err, j)
		})
	}
}

// enlistedIndex: a lane answers its waiting jobs oldest enlisted first,
// at most the limit asked; a collected job is no longer there, and lanes
// never see each other's jobs.
func enlistedIndex(t *testing.T, s *suite) {
	ctx := t.Context()
	at := func(d time.Duration) time.Time { return base.Add(time.Minute + d) }
	third := s.enlisted(t, lane, at(3*time.Second))
	first := s.enlisted(t, lane, at(time.Second))
	second := s.enlisted(t, lane, at(2*time.Second))
	elsewhere := s.enlisted(t, job.LaneKey("default", 2), at(0))
	s.create(t, attempt(at(0))) // running, never enlisted
	ids := func(l string, limit int) []job.Enlistee {
		t.Helper()
		got, err := s.store.Enlisted(ctx, l, limit)
		if err != nil {
			t.Fatalf("enlisted in %s: %v", l, err)
		}
		return got
	}
	e := func(j job.Job) job.Enlistee { return job.Enlistee{ID: j.ID, At: j.EnlistedAt} }
	check := func(what string, got, want []job.Enlistee) {
		t.Helper()
		if !slices.EqualFunc(got, want, func(a, b job.Enlistee) bool { return a.ID == b.ID && a.At.Equal(b.At) }) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("the lane", ids(lane, 10), []job.Enlistee{e(first), e(second), e(third)})
	check("the lane, limit 2", ids(lane, 2), []job.Enlistee{e(first), e(second)})
	check("the lane, limit 0", ids(lane, 0), nil)
	check("the other lane", ids(job.LaneKey("default", 2), 10), []job.Enlistee{e(elsewhere)})
	check("a lane nobody enlisted in", ids(job.LaneKey("other", 1), 10), nil)
	if _, err := s.store.Collect(ctx, job.Collect{ID: first.ID, Owner: job.BatchOwner("me"), Now: at(4 * time.Second), Batch: "b1"}); err != nil {
		t.Fatal(err)
	}
	check("the lane after a collect", ids(lane, 10), []job.Enlistee{e(second), e(third)})
}

// batchSettle: the finishing transitions work unchanged under the batch
// lane's lease: an enlisted job succeeds by its enlisting attempt's batch
// owner, a collected one by its batch's; the worker's own owner no longer
// holds the job.
func batchSettle(t *testing.T, s *suite) {
	now := base.Add(time.Hour)
	result := json.RawMessage(`{"output":"from the batch"}`)
	set := job.Settlement{Cost: 6, Held: reserve, Ran: ran, Saved: 5}
	succeeded := func(j job.Job) job.Job {
		want := j
		want.State, want.Result, want.ResultModel, want.ResultLane = job.Succeeded, result, "m", job.Batch
		want.ErrorClass, want.ErrorDetail = "", ""
		// The stay in the lane ends with its lease (job's unlease).
		want.LeaseOwner, want.LeaseUntil, want.Enlisted, want.EnlistedAt = "", time.Time{}, "", time.Time{}
		// attempt's record: cost 4, saved 3, ran 700 ms, held reserve.
		want.Cost, want.Saved, want.Held, want.RunTime, want.Progress, want.ExpiresAt = 10, 8, 0, 2200*time.Millisecond, 1, keep
		want.Version, want.UpdatedAt = j.Version+1, now
		return want
	}
	succeed := func(j job.Job, owner string) (job.Job, error) {
		return s.store.Succeed(t.Context(), job.Succeed{ID: j.ID, Owner: owner, Now: now, Settlement: set,
			Result: result, Model: "m", Lane: job.Batch, ExpiresAt: keep})
	}
	t.Run("enlisted, by the batch owner of its attempt", func(t *testing.T) {
		t.Parallel()
		// Not collected: its lane marks go with the lease.
		j := s.enlisted(t, lane, base.Add(time.Minute))
		got, err := succeed(j, job.BatchOwner("me"))
		s.applied(t, "succeed", got, err, succeeded(j))
	})
	t.Run("collected, by its batch's owner", func(t *testing.T) {
		t.Parallel()
		j := s.enlisted(t, lane, base.Add(time.Minute))
		j, err := s.store.Collect(t.Context(), job.Collect{ID: j.ID, Owner: job.BatchOwner("me"), Now: base.Add(2 * time.Minute), Batch: "b1"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := succeed(j, job.BatchOwner("b1"))
		s.applied(t, "succeed", got, err, succeeded(j))
	})
	t.Run("the worker that enlisted it holds it no more", func(t *testing.T) {
		t.Parallel()
		j := s.enlisted(t, lane, base.Add(time.Minute))
		_, err := s.store.Heartbeat(t.Context(), job.Heartbeat{ID: j.ID, Owner: "me", Now: now, LeaseUntil: now.Add(time.Hour), Progress: 0.5})
		s.refused(t, "the worker's heartbeat", err, j)
	})
	t.Run("handed back before it was collected, it leaves its lane", func(t *testing.T) {
		t.Parallel()
		l := lane + "-handback"
		j := s.enlisted(t, l, base.Add(time.Minute))
		got, err := s.store.Release(t.Context(), job.Release{ID: j.ID, Owner: job.BatchOwner("me"), Now: now,
			Settlement: job.Settlement{Held: j.Held}, Class: job.Timeout})
		if err != nil || got.Enlisted != "" || !got.EnlistedAt.IsZero() || got.LeaseOwner != "" || got.State != job.Queued {
			t.Fatalf("release: %+v, %v: want queued, out of the lane", got, err)
		}
		waiting, err := s.store.Enlisted(t.Context(), l, 10)
		if err != nil || slices.ContainsFunc(waiting, func(e job.Enlistee) bool { return e.ID == j.ID }) {
			t.Fatalf("enlisted after the release: %v, %v", waiting, err)
		}
	})
	t.Run("a failed item after the hand-back is refused and keeps its cost", func(t *testing.T) {
		t.Parallel()
		// The hand-back and the item's release share the batch's owner;
		// the item's must not be taken for a retry of the hand-back.
		j := s.enlisted(t, lane+"-late", base.Add(time.Minute))
		owner := job.BatchOwner("me")
		back, err := s.store.Release(t.Context(), job.Release{ID: j.ID, Owner: owner, Now: now,
			Settlement: job.Settlement{Held: j.Held}, Class: job.Timeout, HandBack: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.store.Release(t.Context(), job.Release{ID: j.ID, Owner: owner, Now: now.Add(time.Second),
			Settlement: job.Settlement{Cost: 6, Ran: ran}, Class: job.ProviderError})
		if job.ErrorCode(err) != job.CodeConflict {
			t.Fatalf("the late item's release: %v, want refused", err)
		}
		got := s.get(t, j.ID)
		if got.State != job.Queued || got.Cost != back.Cost+6 || got.Held != 0 {
			t.Fatalf("after the late item: %+v, want queued with its cost %d more", got, 6)
		}
	})
}
