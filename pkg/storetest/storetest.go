// Package storetest is the conformance suite every job store must pass. The
// in-memory store (handler tests) and the DynamoDB store (production) run the
// same cases, so a behaviour a handler test relies on is a behaviour the real
// store has: preconditions refused with the current record, exactly one
// winner among racing claimers, no write by a stale owner, no cost ever lost,
// and a version and updated_at that only move forward.
//
// Every case asserts whole records, field by field, against expectations
// written out by hand from the transition's documented effect (not computed
// with the domain's Apply), so the suite also checks the domain itself.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Store is the method set under test: exactly the memory store's.
type Store interface {
	Create(context.Context, job.Job) (job.Job, error)
	Get(context.Context, string) (job.Job, error)
	Peek(context.Context, string) (job.Job, error)
	Claim(context.Context, job.Claim) (job.Job, error)
	Heartbeat(context.Context, job.Heartbeat) (job.Job, error)
	HoldMore(context.Context, job.HoldMore) (job.Job, error)
	Succeed(context.Context, job.Succeed) (job.Job, error)
	Release(context.Context, job.Release) (job.Job, error)
	Defer(context.Context, job.Defer) (job.Job, error)
	End(context.Context, job.End) (job.Job, error)
	WriteOff(context.Context, job.WriteOff) (job.Job, error)
	Await(context.Context, job.Await) (job.Job, error)
	Resume(context.Context, job.Resume) (job.Job, error)
	Detach(context.Context, job.Detach) (job.Job, error)
	Reattach(context.Context, job.Reattach) (job.Job, error)
	Cancel(context.Context, job.Cancel) (job.Job, error)
	Replay(context.Context, job.Replay) (job.Job, error)
	Nudge(context.Context, job.Nudge) (job.Job, error)
	RecordDelivery(context.Context, job.Delivery) (job.Job, error)
	Enlist(context.Context, job.Enlist) (job.Job, error)
	Collect(context.Context, job.Collect) (job.Job, error)
	Enlisted(ctx context.Context, lane string, limit int) ([]job.Enlistee, error)
	List(context.Context, job.ListQuery) (job.Page, error)
	Failures(context.Context, job.FailureQuery, func(job.Failure) error) error
	Unfinished(context.Context, time.Time, func(id string) error) error
	Finished(ctx context.Context, q job.FinishedQuery, each func(job.Job) error) error
	Recent(context.Context, job.RecentQuery, func(job.Job) error) error
}

// Run runs every case as a parallel subtest of t, each against a fresh store
// from newStore (which may use its t for cleanup and unique names).
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &suite{store: newStore(t)})
		})
	}
}

type testCase struct {
	name string
	run  func(*testing.T, *suite)
}

func cases() []testCase {
	return []testCase{
		{"create then get round-trips every field", createAndGet},
		{"second create answers the existing record", duplicateCreate},
		{"unknown ids are not found", unknownIDs},
		{"a peek answers what a poll shows", peek},
		{"records are copies", copies},
		{"claim preconditions refuse", claimRefused},
		{"claim applies", claimApplied},
		{"a backoff holds off claims", notBefore},
		{"racing claimers: exactly one wins", racingClaims},
		{"a stale owner never overwrites", staleOwner},
		{"an empty owner holds nothing", emptyOwner},
		{"a refused finish keeps its cost", refusedFinishKeepsCost},
		{"claims hold the reserve until their attempt settles", holds},
		{"cost sums exactly over attempts", costSum},
		{"a second finish by the same owner keeps its cost", secondFinish},
		{"a finish repeated after a lost answer counts once", repeatedFinish},
		{"an estimated cost marks the record", estimatedCost},
		{"what the lanes saved sums over attempts", savedSum},
		{"version and updated_at move forward", versionAndUpdated},
		{"skewed writers in a row", skewedInARow},
		{"heartbeat", heartbeat},
		{"hold more", holdMore},
		{"succeed", succeed},
		{"succeed with the answer in the payload store", succeedByRef},
		{"release", release},
		{"defer", deferred},
		{"end with an owner", endOwned},
		{"end with no owner", endUnowned},
		{"write-off", writeOff},
		{"a claim's promise to hold spend first", spendFirst},
		{"a written-off attempt settles late", lateSettle},
		{"a cancelled attempt settles or is written off", cancelledAttempt},
		{"await", await},
		{"a resume replaces a written-off attempt's estimate once", resume},
		{"detach", detach},
		{"a detached job is reattached once, when due", reattach},
		{"cancel", cancel},
		{"replay", replay},
		{"nudge", nudge},
		{"delivery", delivery},
		{"enlist", enlist},
		{"collect", collect},
		{"enlisted", enlistedIndex},
		{"the batch lane settles under its own lease", batchSettle},
		{"list", list},
		{"failures", failures},
		{"unfinished", unfinished},
		{"finished sample", finished},
		{"recent", recent},
	}
}

const (
	tenant = "tenant-a"
	other  = "tenant-b"
)

var (
	// base is the fixed time the cases start from: never the wall clock,
	// at millisecond precision like every time a store keeps.
	base = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	// keep is every ExpiresAt the suite sets: a TTL far in the future, so
	// an emulator's TTL reaper (kumo deletes items whose expires_at is
	// before its wall clock, every 30 s) never removes a record mid-case.
	keep = base.AddDate(100, 0, 0)
)

// suite is one store and a sequence for unique request keys; its helpers
// are safe for the parallel subtests of one case.
type suite struct {
	store Store
	seq   atomic.Int64
}

// record is a queued job with a fresh id: 3 attempts, 5 cents, a reserve
// of 2 nanocents per attempt, an hour to go, last written at base; muts
// adjust it in order.
func (s *suite) record(muts ...func(*job.Job)) job.Job {
	key := fmt.Sprintf("key-%d", s.seq.Add(1))
	j := job.Job{
		ID: job.NewID(tenant, key), Tenant: tenant, RequestKey: key, InputHash: "sha256:" + key, Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10}`),
		State: job.Queued, MaxAttempts: 3, Budget: job.Cents(5), Reserve: reserve, Deadline: base.Add(time.Hour),
		Version: 1, CreatedAt: base, UpdatedAt: base,
	}
	for _, m := range muts {
		if m != nil {
			m(&j)
		}
	}
	return j
}

// create stores record(muts...) and asserts Create answered it as given.
func (s *suite) create(t *testing.T, muts ...func(*job.Job)) job.Job {
	t.Helper()
	j := s.record(muts...)
	got, err := s.store.Create(t.Context(), j)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	same(t, "create", got, j)
	return j
}

func (s *suite) get(t *testing.T, id string) job.Job {
	t.Helper()
	j, err := s.store.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return j
}

// claim claims id for owner at now with a one-minute lease, and must win.
func (s *suite) claim(t *testing.T, id, owner string, now time.Time) job.Job {
	t.Helper()
	j, err := s.store.Claim(t.Context(), job.Claim{ID: id, Owner: owner, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil {
		t.Fatalf("claim by %q at %s: %v", owner, now.Format(time.RFC3339Nano), err)
	}
	return j
}

// reserve is every record's Reserve: what each claim holds until its
// attempt settles.
const reserve job.Nanocents = 2

// running makes a record held by owner until until, on its first attempt,
// whose claim holds the record's reserve.
func running(owner string, until time.Time) func(*job.Job) {
	return func(j *job.Job) {
		j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, owner, until
		j.Held += j.Reserve
	}
}

// ended makes a record terminal in state with class.
func ended(state job.State, class job.ErrorClass) func(*job.Job) {
	return func(j *job.Job) {
		j.State, j.Attempts, j.ErrorClass, j.ExpiresAt = state, 1, class, keep
		if state == job.Succeeded {
			j.Result, j.ResultModel, j.Progress = json.RawMessage(`{"output":"kept"}`), "m", 1
		}
	}
}
