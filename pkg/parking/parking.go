// Package parking keeps the outcome of an attempt whose finishing write the
// store kept refusing, so that the answer it paid for is settled later
// instead of generated (and billed) again (docs/parking.md, "Parked
// outcomes"). A worker parks the outcome in a lot (an S3 bucket: another
// service than the table whose writes are failing) as soon as the first
// write of it fails; whoever finds the attempt dead later (its lease ran
// out unrenewed) settles it from the lot before anything else happens to
// the job, and writes it off only when nothing was parked.
package parking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
)

// of reports whether o settles cur's attempt.
func of(o finish.Outcome, cur job.Job) bool {
	id, owner := o.IDs()
	return id == cur.ID && owner == cur.LeaseOwner
}

// Lot is where outcomes are parked, by key (the S3 adapter, pkg/s3).
type Lot interface {
	Put(ctx context.Context, key string, body []byte) error
	// Get answers an error with job.CodeNotFound for a key never put.
	Get(ctx context.Context, key string) ([]byte, error)
	// Delete removes a key, present or not.
	Delete(ctx context.Context, key string) error
}

// Key is where the outcome of owner's attempt at job id is parked: one
// key per attempt (lease owners are unique), so a lot never holds two
// outcomes for one attempt and a reader needs no listing.
func Key(id, owner string) string { return "parked/" + id + "/" + owner }

// Park puts o in the lot under its attempt's key.
func Park(ctx context.Context, lot Lot, o finish.Outcome) error {
	id, owner := o.IDs()
	if id == "" || owner == "" {
		return errors.New("parking: an outcome without a job or an owner cannot be parked")
	}
	body, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("parking: %w", err)
	}
	return lot.Put(ctx, Key(id, owner), body)
}

// Store is the part of the job store that settles a dead attempt.
type Store interface {
	finish.Finisher
	WriteOff(context.Context, job.WriteOff) (job.Job, error)
}

// Patience bounds how long, after a dead attempt's lease ended, a lot that
// cannot be read keeps the attempt from being written off: past it the
// job goes on (its hold charged as an estimate) rather than wait on a
// broken lot for ever; within it, an outage of the lot delays the job.
const Patience = 15 * time.Minute

// How says how a dead attempt was settled.
type How int

const (
	// WrittenOff: nothing was parked; the hold became an estimated cost.
	WrittenOff How = iota
	// Unparked: the attempt's parked outcome was recorded, its exact cost
	// with it.
	Unparked
	// Voided: nothing was parked and the attempt provably never called
	// (Dead.Void): its hold was returned, not charged.
	Voided
	// Returned: the job waited in the batch lane and no collector took it
	// (docs/lanes.md, "The batch lane"): nothing was called, so
	// its hold was returned, not charged, and it went back to the queue.
	Returned
)

// UncollectedDetail is the error detail of a job the batch lane gave back
// because no collector took it before its lease ended.
const UncollectedDetail = "no collector took the job from the batch lane before its lease ended; nothing was billed"

// Recover settles cur's dead attempt (cur.DeadAttempt(now)): from its
// parked outcome when lot holds one, else by writing it off; a job that
// waited in the batch lane uncollected is released with its hold
// (Returned). A nil lot
// parks nothing. A refused write answers the store's Conflict (the record
// moved: decide again); a lot that cannot be read answers its error
// until Patience has passed since the lease ended.
//
// d.Void (SpendFirst's Look) writes the attempt off charging nothing.
func Recover(ctx context.Context, s Store, lot Lot, d Dead) (How, job.Job, error) {
	cur, now := d.Job, d.Now
	if cur.Enlisted != "" && cur.InBatchLane() {
		f := finish.Of{Job: cur, Owner: cur.LeaseOwner, Now: job.NextUpdate(cur.UpdatedAt, now), Settlement: job.Settlement{Held: cur.Held}}
		j, err := f.Release(job.Timeout, UncollectedDetail, time.Time{}).Apply(ctx, s)
		return Returned, j, err
	}
	if lot != nil {
		key := Key(cur.ID, cur.LeaseOwner)
		body, err := lot.Get(ctx, key)
		switch {
		case err == nil:
			var o finish.Outcome
			if json.Unmarshal(body, &o) != nil || !of(o, cur) {
				break // not this attempt's outcome: as good as none
			}
			j, err := o.Apply(ctx, s)
			if err == nil || job.ErrorCode(err) == job.CodeConflict {
				_ = lot.Delete(ctx, key) // the record has it now; the lot's lifecycle rule is the backstop
			}
			return Unparked, j, err
		case job.ErrorCode(err) == job.CodeNotFound:
		case now.Sub(cur.LeaseUntil) < Patience:
			return WrittenOff, job.Job{}, err
		}
	}
	w := job.NewWriteOff(cur, now)
	w.Void = d.Void
	j, err := s.WriteOff(ctx, w)
	if d.Void {
		return Voided, j, err
	}
	return WrittenOff, j, err
}

// Dead is a dead attempt to settle: its record (Job.DeadAttempt(Now))
// and whether it provably never called (Void: SpendFirst's Look).
type Dead struct {
	Job  job.Job
	Now  time.Time
	Void bool
}
