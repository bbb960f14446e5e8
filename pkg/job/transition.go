package job

import (
	"encoding/json"
	"slices"
	"time"
)

// The transitions. Each is applied by a store as one conditional write whose
// condition is the precondition in its doc comment; a refused precondition
// is an *Error{Code: CodeConflict, Job: <current record>}. Every applied
// transition increments Version and moves UpdatedAt forward (never back,
// whatever the writer's clock says).

// Claim takes a job for one attempt, before any model call.
// Precondition: state = queued AND attempts < max_attempts AND deadline >
// Now AND cost < budget AND budget - cost - held >= reserve (the record's
// own worst case: an attempt that could overrun the budget never starts)
// AND (no not_before OR not_before <= Now: a released job's backoff is
// over).
// A running job whose lease ran out is not claimable: its attempt is
// written off first (WriteOff), so no claim ever takes a job over with
// another attempt's hold still on it.
// Effect: state = running, lease_owner = Owner, lease_until = LeaseUntil,
// attempts + 1, progress 0, held + reserve, spend_first = SpendFirst.
type Claim struct {
	ID         string
	Owner      string
	Now        time.Time
	LeaseUntil time.Time
	// SpendFirst is Job.SpendFirst for the attempt: the digest of the
	// spend limits its worker holds before it calls, empty with none.
	SpendFirst string
}

// Heartbeat extends a held lease and records progress.
// Precondition: state = running AND lease_owner = Owner.
type Heartbeat struct {
	ID         string
	Owner      string
	Now        time.Time
	LeaseUntil time.Time
	Progress   float64
}

// HoldMore raises a held attempt's hold by Amount before it calls a
// fallback rung whose worst case the hold does not cover: a worker that
// dies during that rung then leaves a hold that covers what the providers
// may bill for the whole attempt, and the budget is never spent twice over.
// Precondition: state = running AND lease_owner = Owner AND budget - cost
// - held >= Amount.
// Effect: held + Amount. The attempt's finish returns the whole hold.
//
// Total, the attempt's whole hold after the raise, names the raise: a
// raise sent again because the answer to the first was lost (the SDK
// retries a timed-out request) is recognised by the store and applied
// once, not added twice.
type HoldMore struct {
	ID     string
	Owner  string
	Now    time.Time
	Amount Nanocents
	Total  Nanocents
}

// Await records the generation the attempt started with a provider that
// keeps it by id, before the attempt waits for its answer (Pending).
// Precondition: state = running AND lease_owner = Owner.
// Effect: pending = Pending (replacing any earlier one).
type Await struct {
	ID      string
	Owner   string
	Now     time.Time
	Pending Pending
}

// Resume settles a written-off attempt's generation, fetched by a later
// attempt that resumed it instead of generating again: the generation's
// cost (priced from the usage the provider reported) plus what the
// attempt had paid before it (Pending.Paid) replaces the estimate its
// write-off charged (Pending.Held), as the attempt's own late settlement
// would have (AddCost). Only one of the two
// ever lands: both are the written-off attempt's one replacement.
// Precondition: Of.Owner is written off AND its estimate was not replaced.
// Effect: cost + (Of.Paid + Cost - Of.Held).
type Resume struct {
	ID  string
	Now time.Time
	Of  Pending
	// Cost is what the resumed generation cost.
	Cost Nanocents
	// Saved is what it cost less than in its rung's standard lane
	// (Rung.Saved): a generation started in a cheaper lane keeps its
	// saving when another attempt fetches it.
	Saved Nanocents
	// Estimated says the provider did not report the generation's usage.
	Estimated bool
}

// Settlement is what Resume settles for the written-off attempt, as its
// refused late settlement would (AddCost).
func (r Resume) Settlement() Settlement {
	return Settlement{Cost: r.Of.Paid + r.Cost, Held: r.Of.Held, Estimated: r.Estimated || r.Of.Estimated, Saved: r.Saved}
}

// Succeed stores the result and settles the attempt (Settlement).
// Precondition: state = running AND lease_owner = Owner.
// When the precondition fails, the store still settles the attempt
// (AddCost) before answering Conflict: money spent is never lost from the
// record.
type Succeed struct {
	ID    string
	Owner string
	Now   time.Time
	Settlement
	// Result is the answer kept on the record; ResultRef, set instead
	// when the answer is too large for it, where the answer was put in
	// the payload store before this write (docs/payloads.md, "Answers").
	// Omitted from a parked outcome's JSON when empty: a null read back
	// would be stored as the answer "null".
	Result    json.RawMessage `json:"Result,omitempty"`
	ResultRef *Payload        `json:"ResultRef,omitempty"`
	Model     string
	Lane      Lane
	ExpiresAt time.Time
}

// Release hands a job back to the queue after a retryable error; its message
// returns after the backoff.
// Precondition: state = running AND lease_owner = Owner. The attempt is
// settled as in Succeed.
type Release struct {
	ID    string
	Owner string
	Now   time.Time
	Settlement
	Class  ErrorClass
	Detail string
	// NotBefore is when the backoff ends; zero means at once.
	NotBefore time.Time
	// HandBack marks the batch lane handing the job back unanswered
	// (pkg/collector). It is a finishing write of the batch's owner apart
	// from a failed item's release under the same owner: the item's, when
	// it comes after the hand-back, is then refused and keeps its cost,
	// not taken for a retry of the hand-back (Kind).
	HandBack bool
}

// Kind names the release among its owner's finishing writes, which a
// store keeps to recognise a retry of one that landed: a hand-back and a
// failed item's release of the same batch owner are two writes.
func (r Release) Kind() string {
	if r.HandBack {
		return "handback"
	}
	return "release"
}

// Defer hands a claimed job back to the queue before its attempt called a
// model that billed anything: the provider's rate limit is spent
// (docs/ratelimits.md, "Provider rate limits"). The attempt is not
// counted, its hold is returned, and the job waits until NotBefore, the
// bucket's refill time. A wait, not a failure: however long the limit
// lasts, no attempt is spent on it.
// Precondition: state = running AND lease_owner = Owner.
// Effect: state = queued, attempts - 1, held - Held, not_before =
// NotBefore, error_class = Class (rate_limited when unnamed) with Detail,
// the lease removed. A lane's capacity refusal (capacity_unavailable) is
// the other wait that defers (docs/lanes.md, "Cost lanes").
// A retried defer whose first try landed is refused (the lease is gone),
// and the hold is returned once.
type Defer struct {
	ID        string
	Owner     string
	Now       time.Time
	Held      Nanocents
	Class     ErrorClass
	Detail    string
	NotBefore time.Time
}

// Why is the class a defer records: Class, rate_limited when unnamed.
func (d Defer) Why() ErrorClass {
	if d.Class == "" {
		return RateLimited
	}
	return d.Class
}

// End stops a job for good with Class; the state is Class.FinalState()
// (failed or abandoned).
// Precondition: with Owner set, state = running AND lease_owner = Owner;
// with Owner empty, the job is held by nobody: state = queued (a running
// job whose lease ran out is written off first), and, when
// NotReplayedSince is set, the job was not replayed at or after it. The
// attempt, if any, is settled as in Succeed.
type End struct {
	ID    string
	Owner string
	Now   time.Time
	Settlement
	Class     ErrorClass
	Detail    string
	ExpiresAt time.Time
	// NotReplayedSince, on an unowned end, is when the evidence for it
	// appeared (a dead letter's send time): a replay at or after it has
	// already answered that evidence, and the end is refused.
	NotReplayedSince time.Time
}

// Cancel abandons a job on its owner's request; a running attempt notices at
// its next heartbeat.
// Precondition: tenant = Tenant AND state IN (queued, running).
// Effect: abandoned/cancelled. A running attempt's lease stays on the
// record: the attempt still holds its reserve, and its own settlement
// returns it (and removes the lease); if its worker died instead, the
// next worker that sees the record writes the attempt off (WriteOff), so
// a finished job never keeps a hold.
type Cancel struct {
	ID        string
	Tenant    string
	Now       time.Time
	ExpiresAt time.Time
}

// Replay puts a failed job back in the queue on an operator's word, with
// Attempts fresh attempts and until a fresh Deadline: the explicit, recorded way
// out of a terminal state (docs/decisions.md, "Replay"). The
// job then goes through the same claim path as any other. Precondition: state =
// failed AND Deadline > Now AND budget - cost - held >= reserve (one more
// attempt fits the budget: replay never buys more money than the job had).
// Effect: state = queued, max_attempts = attempts + Attempts, deadline =
// Deadline, replays + 1, replayed_at = Now, no backoff; the last error class
// stays until the next attempt.
type Replay struct {
	ID        string
	Now       time.Time
	Attempts  int
	Deadline  time.Time
	ExpiresAt time.Time
}

// WriteOff ends an attempt that can no longer settle itself: its lease ran
// out unrenewed (its worker died, or was cut off from the store) and no
// outcome of it is waiting to be applied. What it held becomes cost as an
// upper estimate (the providers may have billed all of it), so no record
// shows a hold once nothing runs for it, and a running job goes back to
// the queue for its next attempt. If the attempt's own settlement lands
// later (its worker was cut off, not dead), it replaces the estimate with
// what the attempt cost (see AddCost).
// Precondition: lease_owner = Owner AND lease_until <= Now AND version =
// Version: the record is the one the write-off was decided from, so the
// hold it moves is exactly the one it saw (Held) in the state it saw.
// Effect: cost + held, cost_estimated when held > 0, held 0, the lease
// removed, Owner remembered as written off; a running job becomes queued
// with class timeout. A finished job (cancelled while the attempt ran)
// keeps its state. A Void write-off charges nothing: held 0, cost as it
// was.
type WriteOff struct {
	ID      string
	Owner   string
	Now     time.Time
	Version int64
	// Held and State are the record's at Version, for stores that state the
	// effect as values.
	Held  Nanocents
	State State
	// Void says the attempt never called: it was to hold its tenant's
	// spend before calling (Job.SpendFirst) and the hold was voided on
	// the balance without being found there (docs/spend.md, "Crash
	// windows"), so nothing was billed and its hold is returned, not
	// charged as an estimate.
	Void bool
}

// NewWriteOff is the write-off of j's attempt at now.
func NewWriteOff(j Job, now time.Time) WriteOff {
	return WriteOff{ID: j.ID, Owner: j.LeaseOwner, Now: now, Version: j.Version, Held: j.Held, State: j.State}
}

// WriteOffDetail is the error detail of a job whose attempt was written off.
const WriteOffDetail = "the attempt's lease ran out unrenewed; what it held is charged as an estimate"

// VoidDetail is the error detail of a job whose attempt was written off
// void: it died before it called, so nothing was charged.
const VoidDetail = "the attempt's lease ran out unrenewed before it called; nothing was charged"

// Detail is the error detail the write-off leaves on a running job.
func (w WriteOff) Detail() string {
	if w.Void {
		return VoidDetail
	}
	return WriteOffDetail
}

// Nudge records that the reconciler found a job stuck and is re-sending
// its message, so the claim path (not the reconciler) decides what happens.
// Precondition: updated_at <= Stale AND ((state = queued AND not_before <=
// Stale AND the Queued rule) OR (state = running AND lease_until <=
// Stale)): untouched since Stale, and not waiting out a backoff or held by
// a live worker.
// Effect: nudges + 1 (and the version and updated_at, so the next run
// leaves it alone for as long again).
type Nudge struct {
	ID    string
	Now   time.Time
	Stale time.Time
	// Queued says which stale queued jobs the nudge may touch; a running
	// job whose lease expired before Stale it always may.
	Queued NudgeQueued
}

// NudgeQueued is which stale queued jobs a nudge may touch.
type NudgeQueued int

const (
	// NudgeAny touches any stale queued job: with no backlog in the queue,
	// a queued job untouched that long has lost its message.
	NudgeAny NudgeQueued = iota
	// NudgeFirst touches a stale queued job only if no nudge ever did:
	// while the queue has a backlog, a job nudged once most likely has its
	// re-sent message waiting in it, and one never nudged may have lost
	// its only message.
	NudgeFirst
	// NudgeNone leaves queued jobs alone.
	NudgeNone
)

// Retention says how long a finished record is kept. Failed and abandoned
// jobs are what operators study after an incident, so they stay far longer.
type Retention struct {
	Succeeded time.Duration
	Failed    time.Duration
}

// ExpiresAt is when a record that reached state at now may be deleted.
func (r Retention) ExpiresAt(state State, now time.Time) time.Time {
	if state == Succeeded {
		return Millis(now.Add(r.Succeeded))
	}
	return Millis(now.Add(r.Failed))
}

// The preconditions as predicates over the current record. Stores state the
// same predicates as write conditions; the in-memory store and the refusal
// diagnosis use these directly, and the conformance suite holds them equal.

// Allows reports whether the claim's precondition holds for j.
func (c Claim) Allows(j Job) bool {
	// The budget rule (budget.go) as the store's condition states it:
	// cost < budget, not remaining > 0, so a record from before reserves
	// (reserve 0) stays claimable while its budget is not spent.
	return j.Claimable(c.Now) && j.Remaining() >= j.Reserve && j.Cost < j.Budget
}

// Allows reports whether the heartbeat's precondition holds for j.
func (h Heartbeat) Allows(j Job) bool { return heldBy(j, h.Owner) }

// Allows reports whether the hold's precondition holds for j.
func (h HoldMore) Allows(j Job) bool {
	return heldBy(j, h.Owner) && h.Amount >= 0 && j.Budget-j.Cost-j.Held >= h.Amount
}

// Allows reports whether the await's precondition holds for j.
func (a Await) Allows(j Job) bool { return heldBy(j, a.Owner) }

// Allows reports whether the resume's precondition holds for j (that
// the estimate was not replaced is the store's to know: its tokens).
func (r Resume) Allows(j Job) bool {
	return r.Of.Owner != "" && slices.Contains(j.WrittenOff, r.Of.Owner)
}

// Allows reports whether the success's precondition holds for j.
func (s Succeed) Allows(j Job) bool { return heldBy(j, s.Owner) }

// Allows reports whether the release's precondition holds for j.
func (r Release) Allows(j Job) bool { return heldBy(j, r.Owner) }

// Allows reports whether the defer's precondition holds for j.
func (d Defer) Allows(j Job) bool { return heldBy(j, d.Owner) }

// Allows reports whether the end's precondition holds for j.
func (e End) Allows(j Job) bool {
	if e.Owner != "" {
		return heldBy(j, e.Owner)
	}
	if !e.NotReplayedSince.IsZero() && !j.ReplayedAt.Before(e.NotReplayedSince) {
		return false
	}
	return j.State == Queued
}

// Allows reports whether the write-off's precondition holds for j.
func (w WriteOff) Allows(j Job) bool {
	return w.Owner != "" && j.LeaseOwner == w.Owner && !j.LeaseUntil.After(w.Now) && j.Version == w.Version
}

// Allows reports whether the replay's precondition holds for j.
func (r Replay) Allows(j Job) bool {
	return j.State == Failed && r.Deadline.After(r.Now) && r.Attempts > 0 && Covers(j.Remaining(), j.Reserve)
}

// Allows reports whether the nudge's precondition holds for j.
func (n Nudge) Allows(j Job) bool {
	if j.UpdatedAt.After(n.Stale) {
		return false
	}
	switch j.State {
	case Queued:
		return !j.NotBefore.After(n.Stale) && (n.Queued == NudgeAny || n.Queued == NudgeFirst && j.Nudges == 0)
	case Running:
		return !j.LeaseUntil.After(n.Stale)
	}
	return false
}

// Allows reports whether the cancel's precondition holds for j.
func (c Cancel) Allows(j Job) bool {
	return j.Tenant == c.Tenant && (j.State == Queued || j.State == Running)
}

func heldBy(j Job, owner string) bool {
	return owner != "" && j.State == Running && j.LeaseOwner == owner
}

// NextUpdate is the UpdatedAt a write at now gives a record last updated at
// prev: now, unless a writer with a faster clock got there first, in which
// case one millisecond after prev. UpdatedAt never goes backwards.
func NextUpdate(prev, now time.Time) time.Time {
	now = Millis(now)
	if !now.After(prev) {
		// Millis first, so the result keeps the store's precision even if
		// prev did not; it is still strictly after prev.
		return Millis(prev).Add(time.Millisecond)
	}
	return now
}

// The effects, shared by every store that computes them in code.

// Apply returns j after the claim.
func (c Claim) Apply(j Job) Job {
	j.State, j.LeaseOwner, j.LeaseUntil = Running, c.Owner, Millis(c.LeaseUntil)
	j.NotBefore = time.Time{}
	j.Attempts++
	j.Progress = 0
	j.Held += j.Reserve
	j.SpendFirst = c.SpendFirst
	return touch(j, c.Now)
}

// Apply returns j after the heartbeat.
func (h Heartbeat) Apply(j Job) Job {
	j.LeaseUntil, j.Progress = Millis(h.LeaseUntil), ClampProgress(h.Progress)
	return touch(j, h.Now)
}

// Apply returns j after the hold.
func (h HoldMore) Apply(j Job) Job {
	j.Held += h.Amount
	return touch(j, h.Now)
}

// ClampProgress keeps progress in 0..1 (docs/architecture.md, "The job record")
// whatever the estimate said: a provider may stream more tokens than asked for.
// The API's view applies it too, to whatever a record holds.
func ClampProgress(p float64) float64 {
	switch {
	case p > 1:
		return 1
	case p >= 0:
		return p
	}
	return 0 // negative or NaN
}

// Apply returns j after the await.
func (a Await) Apply(j Job) Job {
	p := a.Pending
	j.Pending = &p
	return touch(j, a.Now)
}

// Apply returns j after the resume.
func (r Resume) Apply(j Job) Job {
	return AddCost(j, r.Of.Owner, r.Settlement(), r.Now)
}

// Apply returns j after the success.
func (s Succeed) Apply(j Job) Job {
	j.State, j.Result, j.ResultModel, j.ResultLane = Succeeded, s.Result, s.Model, s.Lane
	j.ResultRef = s.ResultRef
	j.ErrorClass, j.ErrorDetail = "", ""
	j = s.Settlement.Apply(j)
	j.Progress = 1
	j.ExpiresAt = Millis(s.ExpiresAt)
	return unlease(touch(j, s.Now))
}

// Apply returns j after the release.
func (r Release) Apply(j Job) Job {
	j.State, j.ErrorClass, j.ErrorDetail = Queued, r.Class, r.Detail
	j.NotBefore = Millis(r.NotBefore)
	if r.NotBefore.IsZero() {
		j.NotBefore = time.Time{}
	}
	j = r.Settlement.Apply(j)
	return unlease(touch(j, r.Now))
}

// Apply returns j after the defer.
func (d Defer) Apply(j Job) Job {
	j.State, j.ErrorClass, j.ErrorDetail = Queued, d.Why(), d.Detail
	j.NotBefore = Millis(d.NotBefore)
	j.Attempts--
	j.Held -= d.Held
	return unlease(touch(j, d.Now))
}

// Apply returns j after the end.
func (e End) Apply(j Job) Job {
	j.State, j.ErrorClass, j.ErrorDetail = e.Class.FinalState(), e.Class, e.Detail
	j = e.Settlement.Apply(j)
	j.ExpiresAt = Millis(e.ExpiresAt)
	return unlease(touch(j, e.Now))
}

// Apply returns j after the cancel.
func (c Cancel) Apply(j Job) Job {
	j.State, j.ErrorClass, j.ErrorDetail = Abandoned, Cancelled, ""
	j.ExpiresAt = Millis(c.ExpiresAt)
	return touch(j, c.Now)
}

// Apply returns j after the write-off.
func (w WriteOff) Apply(j Job) Job {
	if !w.Void {
		j.CostEstimated = j.CostEstimated || j.Held > 0
		j.Cost += j.Held
	}
	j.Held = 0
	j.WrittenOff = slices.Clone(j.WrittenOff)
	if i, found := slices.BinarySearch(j.WrittenOff, w.Owner); !found {
		j.WrittenOff = slices.Insert(j.WrittenOff, i, w.Owner)
	}
	if j.State == Running {
		j.State, j.ErrorClass, j.ErrorDetail = Queued, Timeout, w.Detail()
		j.NotBefore = time.Time{}
	}
	return unlease(touch(j, w.Now))
}

// Apply returns j after the replay.
func (r Replay) Apply(j Job) Job {
	j.State, j.MaxAttempts, j.Deadline = Queued, j.Attempts+r.Attempts, Millis(r.Deadline)
	j.NotBefore = time.Time{}
	j.Replays++
	j.ReplayedAt = Millis(r.Now)
	j.ExpiresAt = Millis(r.ExpiresAt)
	return touch(j, r.Now)
}

// Apply returns j after the nudge.
func (n Nudge) Apply(j Job) Job {
	j.Nudges++
	return touch(j, n.Now)
}

func touch(j Job, now time.Time) Job {
	j.Version++
	j.UpdatedAt = NextUpdate(j.UpdatedAt, now)
	return j
}

func unlease(j Job) Job {
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	// A stay in the batch lane ends with the lease that held it.
	j.Enlisted, j.EnlistedAt = "", time.Time{}
	return j
}
