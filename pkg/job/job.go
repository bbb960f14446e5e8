package job

import (
	"encoding/json"
	"time"
)

// Job is one record: the product. The API returns it, the worker drives it,
// operators query it after an incident. Times are kept at millisecond
// precision, the precision the store keeps.
type Job struct {
	ID         string
	Tenant     string
	RequestKey string
	// InputHash is "sha256:<hex>" of the canonical request body; it tells a
	// repeated create (same key, same body) from a reused key with other
	// input.
	InputHash string
	Model     string
	// Input is the validated model input as JSON (messages, max_tokens, ...),
	// or empty when it lives in the payload store, at InputRef
	// (docs/payloads.md).
	Input    json.RawMessage
	InputRef *Payload
	// Metadata is the caller's opaque JSON, returned as given.
	Metadata json.RawMessage

	State       State
	Attempts    int
	MaxAttempts int
	Budget      Nanocents
	// Cost is accumulated over every attempt, kept or discarded: exactly
	// what the providers reported, at the configured prices.
	Cost Nanocents
	// CostEstimated says Cost includes an upper estimate for at least one
	// call whose usage the provider never reported (its answer was lost or
	// cut after the request was sent): the provider billed at most that.
	CostEstimated bool
	// Saved is what the job's calls cost less than they would have in
	// their rungs' standard lanes, summed over every attempt like Cost
	// (negative when a premium lane cost more).
	Saved Nanocents
	// Lanes are the lanes the job's owner allows its calls to be served
	// in; nil allows any (Rung.Plan).
	Lanes []Lane
	// AttemptLanes is, per settled attempt that made a call, in attempt
	// order, the lane of its last call (the one that answered, or the
	// last one tried): what the attempt was priced at.
	AttemptLanes []AttemptLane
	// Reserve is the worst case of one attempt's first rung for this input,
	// fixed at creation: a claim takes it only if the budget left covers it.
	Reserve Nanocents
	// Held is what the attempt in flight holds: its claim holds Reserve
	// until its attempt's cost is settled, which returns it. An attempt
	// whose worker died never settles: the next worker that finds its
	// lease ended writes it off (WriteOff), moving the hold into Cost as
	// an estimate, because the provider may have billed it.
	Held Nanocents
	// WrittenOff are the lease owners whose attempts were written off, in
	// sorted order (a store keeps them as a set), so
	// that such an attempt's own late settlement replaces its estimate
	// instead of adding to it.
	WrittenOff []string
	// SpendFirst, set by the claim, is the digest of the tenant spend
	// limits (docs/spend.md) of the worker that claimed the attempt and
	// the claim's time (SpendFirstOf): the attempt calls only once its
	// hold on each limited period's balance landed, so its write-off may
	// prove it never called (WriteOff's Void) by finding no hold. Empty
	// when the worker had no limits.
	SpendFirst string
	// Pending is the generation the last attempt that started one left
	// with the provider, kept by id (Await); nil when none did.
	Pending *Pending
	// Enlisted is the batch lane (LaneKey) the job waits in to be
	// collected since EnlistedAt, and Batch the collector's batch it was
	// collected into (Enlist, Collect); empty otherwise.
	Enlisted   string
	EnlistedAt time.Time
	Batch      string
	Deadline   time.Time
	// RunTime is how long attempts ran, summed over every attempt (at
	// millisecond precision): fallback rungs and retries included, backoffs
	// and queueing not.
	RunTime time.Duration

	LeaseOwner string
	LeaseUntil time.Time
	// NotBefore is when a released job's backoff ends: no claim takes it
	// earlier, so a duplicate message cannot skip a provider's rate limit.
	NotBefore time.Time

	ErrorClass ErrorClass
	// ErrorDetail is a short, secret-free note (for example a provider's
	// status code); never shown instead of ErrorClass.
	ErrorDetail string
	// Result is a succeeded job's answer, or empty when it lives in the
	// payload store, at ResultRef (docs/payloads.md).
	Result    json.RawMessage
	ResultRef *Payload
	// ResultModel names the model that produced Result, and ResultLane
	// the lane it was served in.
	ResultModel string
	ResultLane  Lane
	Progress    float64

	// Replays counts operator replays of the job after it failed, each an
	// explicit transition back to queued (ReplayedAt: the last one).
	Replays    int
	ReplayedAt time.Time
	// Nudges counts the reconciler's re-sends of a stuck job's message.
	Nudges int

	// Callback is where the owner is told of the states it asked for, and
	// Deliveries what became of those deliveries.
	Callback   Callback
	Deliveries Deliveries

	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt time.Time
}

// LeaseLive reports whether a running job's lease still holds at now.
func (j Job) LeaseLive(now time.Time) bool {
	return j.State == Running && j.LeaseUntil.After(now)
}

// Claimable reports whether a claim at now may take the job, ignoring money:
// the same predicate the store's claim condition states.
func (j Job) Claimable(now time.Time) bool {
	return j.State == Queued &&
		j.Attempts < j.MaxAttempts && j.Deadline.After(now) && !j.NotBefore.After(now)
}

// DeadAttempt reports whether j carries an attempt whose lease ended at
// now without its settlement: its worker died, or is cut off from the
// store. Such an attempt is written off (or its parked outcome applied)
// before anything else happens to the job.
func (j Job) DeadAttempt(now time.Time) bool {
	return j.LeaseOwner != "" && !j.LeaseUntil.After(now)
}

// Millis truncates t to the store's precision.
func Millis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
