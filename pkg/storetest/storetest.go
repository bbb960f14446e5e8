// Package storetest is the conformance suite every job store must pass: the
// same cases run against the DynamoDB store (on an emulator or AWS) and the
// in-memory store, so handler tests that use the latter prove behaviour the
// former has too.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Store is the method set under test.
type Store interface {
	Create(context.Context, job.Job) (job.Job, error)
	Get(context.Context, string) (job.Job, error)
	Claim(context.Context, job.Claim) (job.Job, error)
	Heartbeat(context.Context, job.Heartbeat) (job.Job, error)
	Succeed(context.Context, job.Succeed) (job.Job, error)
	Release(context.Context, job.Release) (job.Job, error)
	End(context.Context, job.End) (job.Job, error)
	Cancel(context.Context, job.Cancel) (job.Job, error)
}

// base is the fixed time every case starts from.
var base = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

type suite struct {
	t     *testing.T
	store Store
	ctx   context.Context
	n     int
}

// Run runs every case, each against a fresh store from newStore.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	cases := map[string]func(*suite){
		"create and get round-trip":        createGet,
		"claim preconditions":              claimPreconditions,
		"expired lease is taken over":      takeover,
		"racing claimers: exactly one":     race,
		"stale owner never overwrites":     staleOwner,
		"cost is never lost":               costNeverLost,
		"version and updated_at monotonic": monotonic,
		"finishing transitions":            finishing,
		"end without an owner":             endUnowned,
		"cancel":                           cancel,
		"unknown ids":                      unknown,
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c(&suite{t: t, store: newStore(t), ctx: context.Background()})
		})
	}
}

func (s *suite) newJob(mut func(*job.Job)) job.Job {
	s.t.Helper()
	s.n++
	j := job.Job{
		ID: job.NewID("tenant-a", fmt.Sprintf("%s-%d", s.t.Name(), s.n)), Tenant: "tenant-a",
		RequestKey: fmt.Sprintf("key-%d", s.n), InputHash: "sha256:abc", Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10}`), Metadata: json.RawMessage(`{"k":"v"}`),
		State: job.Queued, MaxAttempts: 3, Budget: job.Cents(5), Deadline: base.Add(time.Hour),
		Version: 1, CreatedAt: base, UpdatedAt: base, ExpiresAt: base.Add(48 * time.Hour),
	}
	if mut != nil {
		mut(&j)
	}
	got, err := s.store.Create(s.ctx, j)
	if err != nil {
		s.t.Fatalf("create: %v", err)
	}
	return got
}

func (s *suite) get(id string) job.Job {
	s.t.Helper()
	j, err := s.store.Get(s.ctx, id)
	if err != nil {
		s.t.Fatalf("get: %v", err)
	}
	return j
}

func (s *suite) claim(id, owner string, at time.Time) job.Job {
	s.t.Helper()
	j, err := s.store.Claim(s.ctx, job.Claim{ID: id, Owner: owner, Now: at, LeaseUntil: at.Add(time.Minute)})
	if err != nil {
		s.t.Fatalf("claim by %s at %s: %v", owner, at, err)
	}
	return j
}

// refused asserts a Conflict carrying the current record, and returns it.
func (s *suite) refused(what string, err error) job.Job {
	s.t.Helper()
	cur, ok := job.ConflictJob(err)
	if !ok {
		s.t.Fatalf("%s: want Conflict with the record, got %v", what, err)
	}
	return cur
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func createGet(s *suite) {
	j := s.newJob(func(j *job.Job) { j.Budget = 123_456_789_123 })
	got := s.get(j.ID)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"id", got.ID, j.ID}, {"tenant", got.Tenant, j.Tenant}, {"request key", got.RequestKey, j.RequestKey},
		{"input hash", got.InputHash, j.InputHash}, {"model", got.Model, j.Model}, {"input", string(got.Input), string(j.Input)},
		{"metadata", string(got.Metadata), string(j.Metadata)}, {"state", got.State, job.Queued}, {"attempts", got.Attempts, 0},
		{"max attempts", got.MaxAttempts, 3}, {"budget", got.Budget, job.Nanocents(123_456_789_123)}, {"cost", got.Cost, job.Nanocents(0)},
		{"deadline", got.Deadline.UTC(), base.Add(time.Hour)}, {"created", got.CreatedAt.UTC(), base}, {"updated", got.UpdatedAt.UTC(), base},
		{"version", got.Version, int64(1)}, {"expires", got.ExpiresAt.Unix(), base.Add(48 * time.Hour).Unix()},
		{"lease owner", got.LeaseOwner, ""}, {"error class", got.ErrorClass, job.ErrorClass("")},
	} {
		equal(s.t, c.name, c.got, c.want)
	}
	_, err := s.store.Create(s.ctx, j)
	if cur := s.refused("second create", err); cur.ID != j.ID || cur.InputHash != j.InputHash {
		s.t.Errorf("conflict carries %+v", cur)
	}
}

func claimPreconditions(s *suite) {
	at := base.Add(time.Second)
	for name, mut := range map[string]func(*job.Job){
		"succeeded":        func(j *job.Job) { j.State = job.Succeeded },
		"failed":           func(j *job.Job) { j.State = job.Failed },
		"abandoned":        func(j *job.Job) { j.State = job.Abandoned },
		"live lease":       func(j *job.Job) { j.State, j.LeaseOwner, j.LeaseUntil = job.Running, "other", at.Add(time.Second) },
		"attempts used":    func(j *job.Job) { j.Attempts = 3 },
		"deadline passed":  func(j *job.Job) { j.Deadline = at },
		"budget spent":     func(j *job.Job) { j.Cost = j.Budget },
		"reserve too high": func(j *job.Job) { j.Cost = j.Budget - 10 },
	} {
		j := s.newJob(mut)
		_, err := s.store.Claim(s.ctx, job.Claim{ID: j.ID, Owner: "me", Now: at, LeaseUntil: at.Add(time.Minute), Reserve: 11})
		cur := s.refused(name, err)
		if cur.Version != j.Version || cur.Attempts != j.Attempts || cur.LeaseOwner != j.LeaseOwner {
			s.t.Errorf("%s: refused claim changed the record: %+v", name, cur)
		}
	}
	j := s.newJob(func(j *job.Job) { j.Cost = j.Budget - 11 })
	got, err := s.store.Claim(s.ctx, job.Claim{ID: j.ID, Owner: "me", Now: at, LeaseUntil: at.Add(time.Minute), Reserve: 11})
	if err != nil {
		s.t.Fatalf("a reserve exactly covered must be claimable: %v", err)
	}
	equal(s.t, "state", got.State, job.Running)
	equal(s.t, "owner", got.LeaseOwner, "me")
	equal(s.t, "lease", got.LeaseUntil.UTC(), at.Add(time.Minute))
	equal(s.t, "attempts", got.Attempts, 1)
	equal(s.t, "version", got.Version, int64(2))
	equal(s.t, "updated", got.UpdatedAt.UTC(), at)
}

func takeover(s *suite) {
	j := s.newJob(nil)
	first := s.claim(j.ID, "a", base.Add(time.Second))
	second := s.claim(j.ID, "b", first.LeaseUntil) // lease_until <= now: expired
	equal(s.t, "owner", second.LeaseOwner, "b")
	equal(s.t, "attempts", second.Attempts, 2)
}

func race(s *suite) {
	j := s.newJob(nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.store.Claim(s.ctx, job.Claim{ID: j.ID, Owner: fmt.Sprint("w", i), Now: base.Add(time.Second), LeaseUntil: base.Add(time.Minute)})
			mu.Lock()
			defer mu.Unlock()
			switch job.ErrorCode(err) {
			case "":
				wins++
			case job.CodeConflict:
				conflicts++
			default:
				s.t.Errorf("claim: %v", err)
			}
		}()
	}
	wg.Wait()
	equal(s.t, "winners", wins, 1)
	equal(s.t, "refused", conflicts, 15)
	equal(s.t, "attempts", s.get(j.ID).Attempts, 1)
}

func staleOwner(s *suite) {
	j := s.newJob(nil)
	a := s.claim(j.ID, "a", base.Add(time.Second))
	b := s.claim(j.ID, "b", a.LeaseUntil)
	now := b.LeaseUntil.Add(-time.Second)
	_, err := s.store.Heartbeat(s.ctx, job.Heartbeat{ID: j.ID, Owner: "a", Now: now, LeaseUntil: now.Add(time.Hour)})
	s.refused("stale heartbeat", err)
	_, err = s.store.Succeed(s.ctx, job.Succeed{ID: j.ID, Owner: "a", Now: now, Result: json.RawMessage(`{"stale":true}`)})
	s.refused("stale succeed", err)
	_, err = s.store.Release(s.ctx, job.Release{ID: j.ID, Owner: "a", Now: now, Class: job.Timeout})
	s.refused("stale release", err)
	_, err = s.store.End(s.ctx, job.End{ID: j.ID, Owner: "a", Now: now, Class: job.Auth})
	s.refused("stale end", err)
	cur := s.get(j.ID)
	if cur.State != job.Running || cur.LeaseOwner != "b" || !cur.LeaseUntil.Equal(b.LeaseUntil) || cur.Result != nil {
		s.t.Fatalf("a stale owner changed the record: %+v", cur)
	}
	done, err := s.store.Succeed(s.ctx, job.Succeed{ID: j.ID, Owner: "b", Now: now, Result: json.RawMessage(`{"ok":1}`), Model: "m", ExpiresAt: now.Add(time.Hour)})
	if err != nil || done.State != job.Succeeded || string(done.Result) != `{"ok":1}` {
		s.t.Fatalf("the owner's success: %+v %v", done, err)
	}
}

func costNeverLost(s *suite) {
	j := s.newJob(func(j *job.Job) { j.Budget, j.MaxAttempts = job.Cents(100), 20 })
	amounts := []job.Nanocents{1, 333_333_333, job.NanosPerCent / 10, 7, 999_999_999}
	var want job.Nanocents
	at := base.Add(time.Second)
	for i, c := range amounts {
		owner := fmt.Sprint("o", i)
		s.claim(j.ID, owner, at)
		at = at.Add(time.Second)
		want += c
		if i%2 == 0 { // refused: the lease was lost to a takeover first
			s.claim(j.ID, owner+"-thief", at.Add(2*time.Minute))
			_, err := s.store.Release(s.ctx, job.Release{ID: j.ID, Owner: owner, Now: at, Cost: c, Class: job.Timeout})
			if cur := s.refused("stale release", err); cur.Cost != want {
				s.t.Fatalf("refused release: cost %d, want %d", cur.Cost, want)
			}
			_, err = s.store.Release(s.ctx, job.Release{ID: j.ID, Owner: owner + "-thief", Now: at.Add(2 * time.Minute), Class: job.Timeout})
			if err != nil {
				s.t.Fatal(err)
			}
			at = at.Add(3 * time.Minute)
			continue
		}
		got, err := s.store.Release(s.ctx, job.Release{ID: j.ID, Owner: owner, Now: at, Cost: c, Class: job.Timeout})
		if err != nil || got.Cost != want {
			s.t.Fatalf("release: cost %d (%v), want %d", got.Cost, err, want)
		}
	}
	// Refused success and end after a cancel keep their cost too.
	s.claim(j.ID, "last", at)
	if _, err := s.store.Cancel(s.ctx, job.Cancel{ID: j.ID, Tenant: "tenant-a", Now: at.Add(time.Second)}); err != nil {
		s.t.Fatal(err)
	}
	_, err := s.store.Succeed(s.ctx, job.Succeed{ID: j.ID, Owner: "last", Now: at.Add(2 * time.Second), Cost: 5, Result: json.RawMessage(`{}`)})
	s.refused("succeed after cancel", err)
	_, err = s.store.End(s.ctx, job.End{ID: j.ID, Owner: "last", Now: at.Add(3 * time.Second), Cost: 6, Class: job.Timeout})
	cur := s.refused("end after cancel", err)
	want += 11
	equal(s.t, "cost", cur.Cost, want)
	equal(s.t, "stored cost", s.get(j.ID).Cost, want)
	equal(s.t, "state", cur.State, job.Abandoned)
	if cur.Result != nil {
		s.t.Errorf("a discarded result was stored: %s", cur.Result)
	}
}

func monotonic(s *suite) {
	j := s.newJob(nil)
	at := base.Add(time.Second)
	c := s.claim(j.ID, "me", at)
	equal(s.t, "claim updated", c.UpdatedAt.UTC(), at)
	// A writer whose clock is an hour behind still moves updated_at forward.
	h, err := s.store.Heartbeat(s.ctx, job.Heartbeat{ID: j.ID, Owner: "me", Now: base.Add(-time.Hour), LeaseUntil: at.Add(2 * time.Minute), Progress: 0.25})
	if err != nil {
		s.t.Fatalf("skewed heartbeat: %v", err)
	}
	equal(s.t, "skewed updated", h.UpdatedAt.UTC(), at.Add(time.Millisecond))
	equal(s.t, "version", h.Version, c.Version+1)
	equal(s.t, "progress", h.Progress, 0.25)
	equal(s.t, "lease", h.LeaseUntil.UTC(), at.Add(2*time.Minute))
	// The same millisecond as the record: still strictly after it.
	h2, err := s.store.Heartbeat(s.ctx, job.Heartbeat{ID: j.ID, Owner: "me", Now: h.UpdatedAt, LeaseUntil: at.Add(3 * time.Minute)})
	if err != nil {
		s.t.Fatal(err)
	}
	equal(s.t, "same-ms updated", h2.UpdatedAt.UTC(), h.UpdatedAt.UTC().Add(time.Millisecond))
	equal(s.t, "version", h2.Version, h.Version+1)
	// A skewed, refused finish's cost add is monotonic too.
	s.claim(j.ID, "thief", at.Add(4*time.Minute))
	_, err = s.store.Succeed(s.ctx, job.Succeed{ID: j.ID, Owner: "me", Now: base.Add(-time.Hour), Cost: 3})
	cur := s.refused("stale succeed", err)
	if !cur.UpdatedAt.After(at.Add(4*time.Minute)) && !cur.UpdatedAt.Equal(at.Add(4*time.Minute).Add(time.Millisecond)) {
		s.t.Errorf("cost add moved updated_at to %s", cur.UpdatedAt)
	}
	equal(s.t, "cost", cur.Cost, job.Nanocents(3))
}

func finishing(s *suite) {
	at := base.Add(time.Second)
	j := s.newJob(nil)
	s.claim(j.ID, "me", at)
	r, err := s.store.Release(s.ctx, job.Release{ID: j.ID, Owner: "me", Now: at.Add(time.Second), Cost: 4, Class: job.RateLimited, Detail: "http 429"})
	if err != nil {
		s.t.Fatal(err)
	}
	equal(s.t, "released state", r.State, job.Queued)
	equal(s.t, "class", r.ErrorClass, job.RateLimited)
	equal(s.t, "detail", r.ErrorDetail, "http 429")
	equal(s.t, "owner", r.LeaseOwner, "")
	equal(s.t, "lease", r.LeaseUntil.IsZero(), true)
	s.claim(j.ID, "me2", at.Add(2*time.Second))
	ok, err := s.store.Succeed(s.ctx, job.Succeed{ID: j.ID, Owner: "me2", Now: at.Add(3 * time.Second), Cost: 6,
		Result: json.RawMessage(`{"output":"x"}`), Model: "gpt", ExpiresAt: at.Add(7 * 24 * time.Hour)})
	if err != nil {
		s.t.Fatal(err)
	}
	equal(s.t, "state", ok.State, job.Succeeded)
	equal(s.t, "result", string(ok.Result), `{"output":"x"}`)
	equal(s.t, "result model", ok.ResultModel, "gpt")
	equal(s.t, "class cleared", ok.ErrorClass, job.ErrorClass(""))
	equal(s.t, "detail cleared", ok.ErrorDetail, "")
	equal(s.t, "cost", ok.Cost, job.Nanocents(10))
	equal(s.t, "attempts", ok.Attempts, 2)
	equal(s.t, "expires", ok.ExpiresAt.Unix(), at.Add(7*24*time.Hour).Unix())
	equal(s.t, "owner cleared", ok.LeaseOwner, "")

	for _, class := range []job.ErrorClass{job.ContentFiltered, job.DeadlineExceeded} {
		k := s.newJob(nil)
		s.claim(k.ID, "me", at)
		e, err := s.store.End(s.ctx, job.End{ID: k.ID, Owner: "me", Now: at.Add(time.Second), Cost: 2, Class: class, ExpiresAt: at.Add(90 * 24 * time.Hour)})
		if err != nil {
			s.t.Fatal(err)
		}
		equal(s.t, string(class)+" state", e.State, class.FinalState())
		equal(s.t, string(class)+" class", e.ErrorClass, class)
		equal(s.t, string(class)+" cost", e.Cost, job.Nanocents(2))
		equal(s.t, string(class)+" owner", e.LeaseOwner, "")
	}
}

func endUnowned(s *suite) {
	at := base.Add(time.Second)
	q := s.newJob(nil)
	e, err := s.store.End(s.ctx, job.End{ID: q.ID, Now: at, Class: job.DeadlineExceeded})
	if err != nil || e.State != job.Abandoned {
		s.t.Fatalf("end of a queued job: %+v %v", e, err)
	}
	r := s.newJob(nil)
	c := s.claim(r.ID, "me", at)
	_, err = s.store.End(s.ctx, job.End{ID: r.ID, Now: at.Add(time.Second), Class: job.BudgetExhausted})
	s.refused("unowned end of a held job", err)
	e, err = s.store.End(s.ctx, job.End{ID: r.ID, Now: c.LeaseUntil, Class: job.Overloaded})
	if err != nil || e.State != job.Failed || e.ErrorClass != job.Overloaded {
		s.t.Fatalf("unowned end after the lease expired: %+v %v", e, err)
	}
	_, err = s.store.End(s.ctx, job.End{ID: r.ID, Now: c.LeaseUntil.Add(time.Second), Class: job.Internal})
	s.refused("end of a terminal job", err)
}

func cancel(s *suite) {
	at := base.Add(time.Second)
	q := s.newJob(nil)
	c, err := s.store.Cancel(s.ctx, job.Cancel{ID: q.ID, Tenant: "tenant-a", Now: at, ExpiresAt: at.Add(time.Hour)})
	if err != nil || c.State != job.Abandoned || c.ErrorClass != job.Cancelled {
		s.t.Fatalf("cancel queued: %+v %v", c, err)
	}
	r := s.newJob(nil)
	s.claim(r.ID, "me", at)
	c, err = s.store.Cancel(s.ctx, job.Cancel{ID: r.ID, Tenant: "tenant-a", Now: at.Add(time.Second)})
	if err != nil || c.State != job.Abandoned || c.LeaseOwner != "" {
		s.t.Fatalf("cancel running: %+v %v", c, err)
	}
	_, err = s.store.Heartbeat(s.ctx, job.Heartbeat{ID: r.ID, Owner: "me", Now: at.Add(2 * time.Second), LeaseUntil: at.Add(time.Hour)})
	s.refused("heartbeat after cancel", err)
	_, err = s.store.Cancel(s.ctx, job.Cancel{ID: r.ID, Tenant: "tenant-a", Now: at.Add(3 * time.Second)})
	if cur := s.refused("second cancel", err); cur.State != job.Abandoned {
		s.t.Errorf("second cancel: %+v", cur)
	}
	o := s.newJob(nil)
	_, err = s.store.Cancel(s.ctx, job.Cancel{ID: o.ID, Tenant: "tenant-b", Now: at})
	equal(s.t, "other tenant's cancel", job.ErrorCode(err), job.CodeNotFound)
	equal(s.t, "untouched", s.get(o.ID).State, job.Queued)
}

func unknown(s *suite) {
	id := job.NewID("nobody", "nothing")
	at := base
	_, err := s.store.Get(s.ctx, id)
	equal(s.t, "get", job.ErrorCode(err), job.CodeNotFound)
	for name, call := range map[string]func() error{
		"claim": func() error {
			_, e := s.store.Claim(s.ctx, job.Claim{ID: id, Owner: "x", Now: at, LeaseUntil: at})
			return e
		},
		"heartbeat": func() error { _, e := s.store.Heartbeat(s.ctx, job.Heartbeat{ID: id, Owner: "x", Now: at}); return e },
		"succeed": func() error {
			_, e := s.store.Succeed(s.ctx, job.Succeed{ID: id, Owner: "x", Now: at, Cost: 1})
			return e
		},
		"release": func() error {
			_, e := s.store.Release(s.ctx, job.Release{ID: id, Owner: "x", Now: at, Cost: 1})
			return e
		},
		"end":    func() error { _, e := s.store.End(s.ctx, job.End{ID: id, Now: at, Class: job.Internal}); return e },
		"cancel": func() error { _, e := s.store.Cancel(s.ctx, job.Cancel{ID: id, Tenant: "nobody", Now: at}); return e },
	} {
		equal(s.t, name, job.ErrorCode(call()), job.CodeNotFound)
	}
}
