package job

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Batch is the lane of a provider's batch API: half the price for an
// answer within the provider's window (docs/lanes.md, "The batch
// lane"). A call in it is not made by the worker: the worker enlists the
// job (Enlist) and a collector submits, polls and settles it.
const Batch Lane = "batch"

// BatchOwner is a lease owner of the batch lane: of a job the attempt of
// owner enlisted (Enlist), then of a job collected into batch id owner
// (Collect). Each is unique to one stay of one job in the lane (a worker's
// lease owner, a batch id), so its finish's token is its own, and the
// collector knows the owner of every job of its batch.
func BatchOwner(owner string) string { return batchOwnerPrefix + owner }

const batchOwnerPrefix = "batch:"

// InBatchLane reports whether j's lease is held by the batch lane.
func (j Job) InBatchLane() bool { return strings.HasPrefix(j.LeaseOwner, batchOwnerPrefix) }

// LaneKey names a route's rung's batch lane: what jobs waiting to be
// collected are found by (Enlist.Lane, the store's enlisted index).
func LaneKey(route string, rung int) string { return route + "#" + strconv.Itoa(rung) }

// Enlist hands a claimed attempt's job to its rung's batch lane: the
// worker makes no call; a collector puts the job into a provider batch
// (Collect) and settles its result with the batch lane's lease
// (BatchOwner) through the same finishing transitions as any attempt.
// The attempt's hold stays until then (raised first, with HoldMore, to
// the batch price's worst case).
// Precondition: state = running AND lease_owner = Owner.
// Effect: lease_owner = BatchOwner(Owner), lease_until = Until (when the
// job must come back to meet its deadline in a faster lane),
// enlisted = Lane, enlisted_at = Now.
type Enlist struct {
	ID    string
	Owner string
	Now   time.Time
	Lane  string
	Until time.Time
}

// Allows reports whether the enlist's precondition holds for j.
func (e Enlist) Allows(j Job) bool { return heldBy(j, e.Owner) && e.Lane != "" }

// Apply returns j enlisted.
func (e Enlist) Apply(j Job) Job {
	j.LeaseOwner, j.LeaseUntil = BatchOwner(e.Owner), Millis(e.Until)
	j.Enlisted, j.EnlistedAt = e.Lane, Millis(e.Now)
	return touch(j, e.Now)
}

// Collect puts an enlisted job into the collector's batch Batch before
// the batch is submitted: the job's custom id in it is its id.
// Precondition: state = running AND lease_owner = Owner (a BatchOwner)
// AND enlisted is set (the job is in no batch yet).
// Effect: batch = Batch, lease_owner = BatchOwner(Batch); enlisted and
// enlisted_at removed.
type Collect struct {
	ID    string
	Owner string
	Now   time.Time
	Batch string
}

// Allows reports whether the collect's precondition holds for j.
func (c Collect) Allows(j Job) bool {
	return heldBy(j, c.Owner) && strings.HasPrefix(c.Owner, batchOwnerPrefix) && j.Enlisted != "" && c.Batch != ""
}

// Apply returns j collected.
func (c Collect) Apply(j Job) Job {
	j.Batch, j.Enlisted, j.EnlistedAt = c.Batch, "", time.Time{}
	j.LeaseOwner = BatchOwner(c.Batch)
	return touch(j, c.Now)
}

// Enlistee is a job waiting in a batch lane to be collected.
type Enlistee struct {
	ID string
	At time.Time
}

// BatchState is where a collector's batch is.
type BatchState string

// The batch states: jobs are being put into it; its jobs are final and
// may be with the provider (a submit was or is about to be sent, its
// answer not recorded); it is with the provider; the provider refused
// to make it and its jobs are being handed back (never sent again: it
// stays open only until each is); its results are settled (or, Refusal
// set, its jobs handed back).
const (
	Collecting BatchState = "collecting"
	Sealed     BatchState = "sealed"
	Submitted  BatchState = "submitted"
	Refused    BatchState = "refused"
	Settled    BatchState = "settled"
)

// BatchRecord is one provider batch as the collector keeps it, so a
// collector that dies at any step loses nothing: the next run carries on
// from State. Jobs are the jobs collected into it; ProviderID is the
// provider's id once submitted. HandBackAt is the earliest lease end of
// the jobs it still holds: until then no job of it is due to be handed
// back, so a run that finds it unfinished reads none of them (zero:
// unknown, read them all). SealedAt is when its jobs were made final,
// before any send: a provider batch an earlier send made was made after
// it. Refusal and RefusalDetail are the class and short secret-free
// detail of the provider's refusal to make the batch (State Refused,
// then Settled), empty for a batch it took.
type BatchRecord struct {
	ID            string
	Lane          string
	Provider      string
	Model         string
	State         BatchState
	ProviderID    string
	Jobs          []BatchJob
	HandBackAt    time.Time
	SealedAt      time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Refusal       ErrorClass
	RefusalDetail string
}

// BatchJob is one job of a batch (its custom id) and what it held when
// it was collected: what its settlement returns, or, had its stay been
// written off, what the write-off charged and its result replaces.
type BatchJob struct {
	ID   string    `json:"id"`
	Held Nanocents `json:"held"`
}

// MaxBatchJobs is the most jobs one batch record keeps: a DynamoDB item
// holds 400 KB, a job (its id and its hold) about 40 bytes; 8,000 leaves
// a fifth of the item spare (moto, the second emulator, refuses items a
// little under DynamoDB's limit). A lane with more waiting makes several
// batches.
const MaxBatchJobs = 8_000

// AnyBatchLane reports whether a route of routes offers a batch lane: a
// collector is needed only then.
func AnyBatchLane(routes map[string]Route) bool {
	for _, r := range routes {
		for _, g := range r.Rungs {
			if _, ok := g.InLane(Batch); ok {
				return true
			}
		}
	}
	return false
}

// BatchLaneProviders are the providers the routes' batch lanes call,
// sorted: the only ones a collector calls, so the only ones the
// collector function builds and the only keys its role may read.
func BatchLaneProviders(routes map[string]Route) []string {
	seen := map[string]bool{}
	for _, r := range routes {
		for _, g := range r.Rungs {
			if b, ok := g.InLane(Batch); ok {
				seen[b.Provider] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
