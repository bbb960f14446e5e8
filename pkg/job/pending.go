package job

import (
	"slices"
	"time"
)

// Pending is a generation a provider keeps by id while it runs and for a
// while after (OpenAI's background responses: docs/resume.md,
// "Resuming a paid generation"). The attempt that started it records it
// on the job (Await) before it waits for the answer, so that if the
// attempt dies, the worker that takes the job over fetches the answer the
// provider already billed instead of paying for it again (Resume).
type Pending struct {
	// Owner is the lease owner of the attempt that started the
	// generation: only an attempt written off (WrittenOff) leaves a
	// generation to resume; one that settled itself paid for it.
	Owner string `json:"owner"`
	// Provider and Model name the rung that called it (the route's
	// provider entry and its model id): its price prices the resumed
	// usage.
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Lane is the lane it was called in (omitted: standard), whose price
	// prices it.
	Lane Lane `json:"lane,omitempty"`
	// ID is the provider's id for the generation.
	ID string `json:"id"`
	// Held is what the attempt held when it started the generation: what
	// its write-off charged as an estimate. Paid is what the attempt's
	// earlier rungs had cost by then (Estimated: partly an estimate).
	// A resumed generation's cost, plus Paid, replaces the estimate.
	Held      Nanocents `json:"held"`
	Paid      Nanocents `json:"paid,omitempty"`
	Estimated bool      `json:"estimated,omitempty"`
	// Since is when a detached attempt started the generation, and Due,
	// while it is detached (Detach), when its reattach is due: no worker
	// waits for it meanwhile (docs/resume.md, "Detached routes"). Both
	// are zero on an attached attempt's generation.
	Since time.Time `json:"since,omitzero"`
	Due   time.Time `json:"due,omitzero"`
}

// MaxPendingID is the longest provider id a record keeps: OpenAI's are
// about 50 bytes. A longer one is not recorded (its generation cannot be
// resumed), so the record's size stays bounded.
const MaxPendingID = 128

// Resumable reports whether j carries a generation a new attempt should
// resume before it generates: one started by an attempt that was written
// off. Its estimate may already have been replaced (by an earlier
// resume whose attempt died in turn, or by the attempt's own late
// settlement): the answer is still paid for, and Resume replaces an
// estimate once.
func (j Job) Resumable() bool {
	return j.Pending != nil && j.Pending.ID != "" && slices.Contains(j.WrittenOff, j.Pending.Owner)
}

// Detached reports whether j's attempt let go of its generation until
// its reattach is due (Detach): nobody waits for it, and the next message
// reattaches it (Reattach) rather than claiming the job.
func (j Job) Detached() bool {
	return j.Pending != nil && !j.Pending.Due.IsZero() && j.LeaseOwner != "" && j.LeaseOwner == j.Pending.Owner
}
