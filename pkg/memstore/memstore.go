// Package memstore is an in-memory job store with the same contract as the
// DynamoDB store: it passes the same conformance suite, so handler tests that
// use it prove behaviour the real store has too. It is for tests and for
// trying the handlers without an emulator, not for production.
package memstore

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Store keeps jobs in a map behind one mutex; every transition checks its
// precondition and applies its effect atomically, as one conditional write.
type Store struct {
	mu   sync.Mutex
	jobs map[string]job.Job
	// ended is when each failed or abandoned job ended: the failure
	// index's sort key, which later cost-only writes do not move.
	ended map[string]time.Time
	// settled are the finishing writes and raises applied to each job, by
	// owner and kind (and kind+"+cost" for a refused finish's settlement):
	// a write repeated because its first answer was lost is recognised, as
	// DynamoDB's settled set recognises it, and nothing is added twice.
	settled map[string]map[string]bool
}

// New returns an empty store.
func New() *Store {
	return &Store{jobs: map[string]job.Job{}, ended: map[string]time.Time{}, settled: map[string]map[string]bool{}}
}

// Create inserts j unless its id exists; then it answers Conflict with the
// existing record.
func (s *Store) Create(_ context.Context, j job.Job) (job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.jobs[j.ID]; ok {
		return job.Job{}, job.Conflict(clone(cur))
	}
	s.jobs[j.ID] = clone(j)
	return clone(j), nil
}

// Get returns the record with id, or NotFound.
func (s *Store) Get(_ context.Context, id string) (job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return job.Job{}, job.NotFound()
	}
	return clone(j), nil
}

// Peek answers what a poll shows of the record (job.Peeked). Memory is
// always consistent, so it is never stale.
func (s *Store) Peek(ctx context.Context, id string) (job.Job, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return job.Job{}, err
	}
	return job.Peeked(j), nil
}

// Claim applies job.Claim.
func (s *Store) Claim(_ context.Context, c job.Claim) (job.Job, error) {
	return s.apply(c.ID, c.Allows, c.Apply, write{}, c.Now)
}

// Heartbeat applies job.Heartbeat.
func (s *Store) Heartbeat(_ context.Context, h job.Heartbeat) (job.Job, error) {
	return s.apply(h.ID, h.Allows, h.Apply, write{}, h.Now)
}

// HoldMore applies job.HoldMore.
func (s *Store) HoldMore(_ context.Context, h job.HoldMore) (job.Job, error) {
	return s.apply(h.ID, h.Allows, h.Apply, write{owner: h.Owner, kind: "hold" + strconv.FormatInt(int64(h.Total), 10)}, h.Now)
}

// Await applies job.Await.
func (s *Store) Await(_ context.Context, a job.Await) (job.Job, error) {
	return s.apply(a.ID, a.Allows, a.Apply, write{}, a.Now)
}

// Detach applies job.Detach.
func (s *Store) Detach(_ context.Context, d job.Detach) (job.Job, error) {
	return s.apply(d.ID, d.Allows, d.Apply, write{}, d.Now)
}

// Reattach applies job.Reattach.
func (s *Store) Reattach(_ context.Context, r job.Reattach) (job.Job, error) {
	return s.apply(r.ID, r.Allows, r.Apply, write{}, r.Now)
}

// Resume applies job.Resume: once per written-off attempt, the same one
// replacement its own late settlement would make (see apply).
func (s *Store) Resume(_ context.Context, r job.Resume) (job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.jobs[r.ID]
	if !ok {
		return job.Job{}, job.NotFound()
	}
	if !r.Allows(cur) {
		return job.Job{}, job.Conflict(clone(cur))
	}
	mark := replaced(r.Of.Owner)
	if s.settled[r.ID][mark] {
		return clone(cur), nil
	}
	cur = r.Apply(cur)
	s.jobs[r.ID] = cur
	s.markApplied(r.ID, mark)
	return clone(cur), nil
}

// replaced marks the one replacement of a written-off attempt's estimate.
func replaced(owner string) string { return owner + "#replaced" }

// Succeed applies job.Succeed, settling the attempt even when it is refused.
func (s *Store) Succeed(_ context.Context, t job.Succeed) (job.Job, error) {
	return s.apply(t.ID, t.Allows, t.Apply, write{t.Owner, "succeed", t.Settlement}, t.Now)
}

// Release applies job.Release, settling the attempt even when it is refused.
func (s *Store) Release(_ context.Context, t job.Release) (job.Job, error) {
	return s.apply(t.ID, t.Allows, t.Apply, write{t.Owner, t.Kind(), t.Settlement}, t.Now)
}

// End applies job.End, settling the attempt even when it is refused.
func (s *Store) End(_ context.Context, t job.End) (job.Job, error) {
	return s.apply(t.ID, t.Allows, t.Apply, write{t.Owner, "end", t.Settlement}, t.Now)
}

// Defer applies job.Defer.
func (s *Store) Defer(_ context.Context, d job.Defer) (job.Job, error) {
	return s.apply(d.ID, d.Allows, d.Apply, write{}, d.Now)
}

// WriteOff applies job.WriteOff.
func (s *Store) WriteOff(_ context.Context, w job.WriteOff) (job.Job, error) {
	return s.apply(w.ID, w.Allows, w.Apply, write{}, w.Now)
}

// Cancel applies job.Cancel; another tenant's job is NotFound.
func (s *Store) Cancel(_ context.Context, c job.Cancel) (job.Job, error) {
	s.mu.Lock()
	cur, ok := s.jobs[c.ID]
	s.mu.Unlock()
	if ok && cur.Tenant != c.Tenant {
		return job.Job{}, job.NotFound()
	}
	return s.apply(c.ID, c.Allows, c.Apply, write{}, c.Now)
}

// Replay applies job.Replay.
func (s *Store) Replay(_ context.Context, r job.Replay) (job.Job, error) {
	return s.apply(r.ID, r.Allows, r.Apply, write{}, r.Now)
}

// Nudge applies job.Nudge.
func (s *Store) Nudge(_ context.Context, n job.Nudge) (job.Job, error) {
	return s.apply(n.ID, n.Allows, n.Apply, write{}, n.Now)
}

// RecordDelivery applies job.Delivery.
func (s *Store) RecordDelivery(_ context.Context, d job.Delivery) (job.Job, error) {
	return s.apply(d.ID, func(job.Job) bool { return true }, d.Apply, write{}, d.Now)
}

// Len is the number of records, for tests that prove nothing was written.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}

// write names a write by its owner and kind, for the tokens DynamoDB's
// settled set keeps, and carries what a finishing write settles even when
// it is refused.
type write struct {
	owner, kind string
	settles     job.Settlement
}

func (s *Store) apply(id string, allows func(job.Job) bool, effect func(job.Job) job.Job, set write, now time.Time) (job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.jobs[id]
	if !ok {
		return job.Job{}, job.NotFound()
	}
	token := set.token()
	if token != "" && s.settled[id][token] {
		return clone(cur), nil // our own earlier try was applied
	}
	if !allows(cur) {
		// A written-off attempt's estimate is replaced once, by its own
		// late settlement or by a resume of its generation (Resume).
		mark := ""
		switch {
		case set.owner != "" && slices.Contains(cur.WrittenOff, set.owner):
			mark = replaced(set.owner)
		case token != "":
			mark = token + "+cost"
		}
		switch {
		case mark != "" && s.settled[id][mark]: // its cost was added by our earlier try
		case !set.settles.IsZero():
			cur = job.AddCost(cur, set.owner, set.settles, now)
			s.jobs[id] = cur
			s.markApplied(id, mark)
		}
		return job.Job{}, job.Conflict(clone(cur))
	}
	s.markApplied(id, token)
	// The effect may carry the caller's buffers (Succeed.Result): store a
	// copy, so a caller reusing them cannot change the record.
	next := clone(effect(cur))
	s.jobs[id] = next
	switch {
	case next.State == job.Failed || next.State == job.Abandoned:
		if !cur.State.Terminal() {
			s.ended[id] = job.Millis(now)
		}
	default:
		delete(s.ended, id)
	}
	return clone(next), nil
}

// token names a finishing write by its owner and kind, as DynamoDB's
// settled set does; an unowned write has none.
func (set write) token() string {
	if set.owner == "" || set.kind == "" {
		return ""
	}
	return set.owner + "#" + set.kind
}

// markApplied records that the write token names was applied to job id
// (DynamoDB's ADD of the token to the settled set), so a repeat of it is
// recognised; an unowned write (no token) leaves no mark.
func (s *Store) markApplied(id, token string) {
	if token == "" {
		return
	}
	if s.settled[id] == nil {
		s.settled[id] = map[string]bool{}
	}
	s.settled[id][token] = true
}

func clone(j job.Job) job.Job {
	j.Input = cloneRaw(j.Input)
	j.Metadata = cloneRaw(j.Metadata)
	j.Result = cloneRaw(j.Result)
	j.Callback.Events = slices.Clone(j.Callback.Events)
	j.WrittenOff = slices.Clone(j.WrittenOff)
	j.Lanes = slices.Clone(j.Lanes)
	j.AttemptLanes = slices.Clone(j.AttemptLanes)
	if j.Pending != nil {
		p := *j.Pending
		j.Pending = &p
	}
	if j.ResultRef != nil {
		r := *j.ResultRef
		j.ResultRef = &r
	}
	return j
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}
