package job

import (
	"slices"
	"time"
)

// Settlement is what an attempt's finish settles on the record, in the same
// write as the finish: the cost is added, the hold is returned, the run
// time is added. Every finishing transition (Succeed, Release, End) carries
// one, and a store that refuses the finish still applies it (AddCost), so
// money an attempt spent is never lost from the record.
type Settlement struct {
	// Cost is what the attempt cost, exactly as priced from the providers'
	// usage (or an upper estimate, see Estimated).
	Cost Nanocents
	// Held is what the attempt held (its claim's reserve and any
	// HoldMore), returned now that its cost is known.
	Held Nanocents
	// Ran is how long the attempt ran, added to the record's RunTime (the
	// latency operators size timeouts and sync-vs-async decisions with).
	Ran time.Duration
	// Estimated says Cost includes an estimate for a call whose usage the
	// provider never reported; the record then says its cost is estimated.
	Estimated bool
	// Saved is what the attempt's calls cost less than at their rungs'
	// standard prices (Rung.Saved), added to the record's Saved.
	Saved Nanocents
	// Lane is the lane of the attempt's last call and Attempt the
	// attempt's number: together the attempt's entry in the record's
	// AttemptLanes. A settlement without either (no call made, or an
	// attempt it cannot name) adds none.
	Lane    Lane
	Attempt int
}

// IsZero reports whether s settles nothing: a write that carries it has no
// attempt's money to keep when it is refused. The lane and the attempt's
// number alone settle nothing: an attempt whose call was refused unbilled
// paid nothing.
func (s Settlement) IsZero() bool {
	s.Lane, s.Attempt = "", 0
	return s == Settlement{}
}

// Apply returns j with s settled. An estimated cost marks the record's
// cost estimated for good: a sum with one estimate in it is an estimate.
func (s Settlement) Apply(j Job) Job {
	j.Cost += s.Cost
	j.Saved += s.Saved
	j.CostEstimated = j.CostEstimated || s.Estimated
	j.Held -= s.Held
	j.RunTime += s.Ran.Truncate(time.Millisecond)
	if s.Lane != "" && s.Attempt > 0 {
		j.AttemptLanes = WithAttemptLane(j.AttemptLanes, AttemptLane{Attempt: s.Attempt, Lane: s.Lane})
	}
	return j
}

// AddCost returns j with a discarded attempt of owner settled (its cost
// and run time added, its hold returned), the one write that needs no
// precondition. An attempt already written off (WriteOff) has no hold
// left: what it held was charged as an estimate, which its cost now
// replaces (the record's cost stays marked estimated: a sum that had an
// estimate in it cannot tell whether another one remains). A lease the
// attempt still has on the record (a job cancelled while it ran) goes
// with its settlement.
func AddCost(j Job, owner string, s Settlement, now time.Time) Job {
	if owner != "" && slices.Contains(j.WrittenOff, owner) {
		s.Cost, s.Held = s.Cost-s.Held, 0
	}
	j = s.Apply(j)
	if owner != "" && j.LeaseOwner == owner {
		j = unlease(j)
	}
	return touch(j, now)
}
