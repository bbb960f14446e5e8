package job

import "time"

// Detach lets an attempt's generation run on without a worker waiting for
// it (docs/resume.md, "Detached routes"): the attempt has started it with
// a provider that keeps it by id and recorded it (Await), and ends its
// invocation; a delayed message brings the job back when the reattach is
// due (Reattach). The attempt is not over: it keeps its lease, its hold and
// its count, and no settlement is made until the generation is reattached.
// Precondition: state = running AND lease_owner = Owner.
// Effect: pending = Pending (its Due set: the job is detached),
// lease_until = LeaseUntil (the reattach's due time plus a margin).
type Detach struct {
	ID         string
	Owner      string
	Now        time.Time
	LeaseUntil time.Time
	Pending    Pending
}

// Reattach takes a detached job (Job.Detached) whose reattach is due for one
// look at its generation, without counting a new attempt: the attempt
// that started it goes on under a new owner. Only one reattach of a
// detachment lands: a duplicate delivery of the reattach message is
// refused (the first moved the version and the owner), so it costs a
// round trip to the store, never a second look or a second generation.
// Precondition: version = Version AND lease_owner = Of, on a record where
// the job is detached with its reattach due (Due <= Now) and state IN
// (running, abandoned: cancelled while detached, whose generation the
// reattach stops). The version pins the record the reattach was decided
// from, as WriteOff's does.
// Effect: lease_owner = Owner, lease_until = LeaseUntil, pending's owner
// Owner and its Due removed (the job is attached again: if this owner
// dies, its write-off leaves the generation to resume). attempts, held
// and state unchanged.
type Reattach struct {
	ID         string
	Of         string
	Owner      string
	Now        time.Time
	LeaseUntil time.Time
	Version    int64
	// Pending is the record's at Version, for stores that state the
	// effect as values (Reattached).
	Pending Pending
}

// NewReattach is the reattach of detached j by owner at now, for a lease
// until until.
func NewReattach(j Job, owner string, now, until time.Time) Reattach {
	r := Reattach{ID: j.ID, Of: j.LeaseOwner, Owner: owner, Now: now, LeaseUntil: until, Version: j.Version}
	if j.Pending != nil {
		r.Pending = *j.Pending
	}
	return r
}

// Reattached is the pending generation a reattach of p by owner leaves.
func (c Reattach) Reattached(p Pending) Pending {
	p.Owner, p.Due = c.Owner, time.Time{}
	return p
}

// Due reports whether detached j's reattach is due at now.
func (j Job) Due(now time.Time) bool {
	return j.Detached() && !j.Pending.Due.After(now)
}

// Allows reports whether the detach's precondition holds for j.
func (d Detach) Allows(j Job) bool { return heldBy(j, d.Owner) }

// Allows reports whether the reattach's precondition holds for j.
func (c Reattach) Allows(j Job) bool {
	return c.Owner != "" && c.Of != "" && j.Version == c.Version && j.LeaseOwner == c.Of &&
		j.Due(c.Now) && (j.State == Running || j.State == Abandoned)
}

// Apply returns j after the detach.
func (d Detach) Apply(j Job) Job {
	p := d.Pending
	j.Pending = &p
	j.LeaseUntil = Millis(d.LeaseUntil)
	return touch(j, d.Now)
}

// Apply returns j after the reattach.
func (c Reattach) Apply(j Job) Job {
	p := c.Reattached(*j.Pending)
	j.Pending = &p
	j.LeaseOwner, j.LeaseUntil = c.Owner, Millis(c.LeaseUntil)
	return touch(j, c.Now)
}
