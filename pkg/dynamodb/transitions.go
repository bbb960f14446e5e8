package dynamodb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The conditions below state, in DynamoDB's words, exactly the Allows
// predicates of pkg/job; the conformance suite holds the two equal.
const (
	// heldCond is job's heldBy: an empty owner holds nothing, even a lease
	// that a claim by an empty owner recorded.
	heldCond = "#state = :running AND #lease_owner = :owner AND #lease_owner <> :nobody"
	// unheldCond: held by nobody. A running job whose lease ran out is
	// still held by its dead attempt until that attempt is written off.
	unheldCond = "#state = :queued"
	claimCond  = unheldCond + " AND #attempts < #max_attempts AND #deadline_ms > :now AND #cost_nc < #budget_nc AND " + fitsReserve + " AND (attribute_not_exists(#not_before_ms) OR #not_before_ms <= :now)"
	// fitsReserve: the budget left covers the record's reserve; a record
	// written before reserves existed has none, and holds nothing.
	fitsReserve = "(attribute_not_exists(#reserve_nc) OR #remaining_nc >= #reserve_nc)"
	// unlease also takes a job out of the batch lane's enlisted index: a
	// stay in the lane ends with the lease that held it (job's unlease).
	unlease = " REMOVE #lease_owner, #lease_until_ms, #enl_pk, #enl_ms"
)

func st(v job.State) types.AttributeValue { return avS(string(v)) }

// Claim applies job.Claim.
func (s *Store) Claim(ctx context.Context, c job.Claim) (job.Job, error) {
	v := map[string]types.AttributeValue{
		":queued": st(job.Queued), ":running": st(job.Running), ":now": avN(c.Now.UnixMilli()),
		":owner": avS(c.Owner), ":lease": avN(c.LeaseUntil.UnixMilli()), ":zero": avN(0), ":one": avN(1),
	}
	set, remove := "SET #state = :running, #lease_owner = :owner, #lease_until_ms = :lease, #progress = :zero, #updated_ms = :upd, #remaining_nc = #remaining_nc - if_not_exists(#reserve_nc, :zero)", " REMOVE #not_before_ms"
	if c.SpendFirst != "" {
		set, v[":sf"] = set+", #spend_first = :sf", avS(c.SpendFirst)
	} else {
		remove += ", #spend_first"
	}
	return s.apply(ctx, c.ID, c.Now, c.Allows, update{cond: claimCond, expr: set + remove + " ADD #attempts :one, #version :one", values: v})
}

// Heartbeat applies job.Heartbeat.
func (s *Store) Heartbeat(ctx context.Context, h job.Heartbeat) (job.Job, error) {
	p := job.Heartbeat{Progress: h.Progress}.Apply(job.Job{}).Progress // clamped as the domain clamps it
	return s.apply(ctx, h.ID, h.Now, h.Allows, update{
		cond: heldCond,
		expr: "SET #lease_until_ms = :lease, #progress = :progress, #updated_ms = :upd ADD #version :one",
		values: map[string]types.AttributeValue{
			":running": st(job.Running), ":owner": avS(h.Owner), ":nobody": avS(""), ":lease": avN(h.LeaseUntil.UnixMilli()), ":progress": avF(p), ":one": avN(1),
		},
	})
}

// HoldMore applies job.HoldMore: held is budget - cost - remaining,
// so taking Amount off remaining_nc holds it.
func (s *Store) HoldMore(ctx context.Context, h job.HoldMore) (job.Job, error) {
	return s.apply(ctx, h.ID, h.Now, h.Allows, update{
		cond: heldCond + " AND #remaining_nc >= :amount",
		expr: "SET #remaining_nc = #remaining_nc - :amount, #updated_ms = :upd ADD #version :one",
		values: map[string]types.AttributeValue{
			":running": st(job.Running), ":owner": avS(h.Owner), ":nobody": avS(""), ":amount": avN(int64(h.Amount)), ":one": avN(1),
		},
		token: finishToken(h.Owner, "hold"+strconv.FormatInt(int64(h.Total), 10)),
	})
}

// Await applies job.Await.
func (s *Store) Await(ctx context.Context, a job.Await) (job.Job, error) {
	b, err := json.Marshal(a.Pending)
	if err != nil {
		return job.Job{}, fmt.Errorf("dynamodb: encode pending generation: %w", err)
	}
	v := map[string]types.AttributeValue{":pending": avS(string(b)), ":one": avN(1)}
	held(v, a.Owner)
	return s.apply(ctx, a.ID, a.Now, a.Allows, update{cond: heldCond, expr: "SET #pending = :pending, #updated_ms = :upd ADD #version :one", values: v})
}

// Detach applies job.Detach.
func (s *Store) Detach(ctx context.Context, d job.Detach) (job.Job, error) {
	b, err := json.Marshal(d.Pending)
	if err != nil {
		return job.Job{}, fmt.Errorf("dynamodb: encode pending generation: %w", err)
	}
	v := map[string]types.AttributeValue{":pending": avS(string(b)), ":lease": avN(d.LeaseUntil.UnixMilli()), ":one": avN(1)}
	held(v, d.Owner)
	return s.apply(ctx, d.ID, d.Now, d.Allows, update{cond: heldCond,
		expr: "SET #pending = :pending, #lease_until_ms = :lease, #updated_ms = :upd ADD #version :one", values: v})
}

// Reattach applies job.Reattach, under a condition on the version and
// owner it was decided from (the record was detached and due at that
// version, which job.Reattach.Allows checks in code).
func (s *Store) Reattach(ctx context.Context, r job.Reattach) (job.Job, error) {
	if p := r.Pending; p.Due.IsZero() || p.Due.After(r.Now) {
		// Not due at the version it names (the due time lives in the
		// pending JSON, which no condition can read): refused as the
		// condition would refuse it, with the record now.
		cur, err := s.Get(ctx, r.ID)
		if err != nil {
			return job.Job{}, err
		}
		return job.Job{}, job.Conflict(cur)
	}
	b, err := json.Marshal(r.Reattached(r.Pending))
	if err != nil {
		return job.Job{}, fmt.Errorf("dynamodb: encode pending generation: %w", err)
	}
	v := map[string]types.AttributeValue{":pending": avS(string(b)), ":of": avS(r.Of), ":owner": avS(r.Owner),
		":lease": avN(r.LeaseUntil.UnixMilli()), ":v": avN(r.Version), ":one": avN(1)}
	return s.apply(ctx, r.ID, r.Now, r.Allows, update{cond: "#version = :v AND #lease_owner = :of",
		expr: "SET #pending = :pending, #lease_owner = :owner, #lease_until_ms = :lease, #updated_ms = :upd ADD #version :one", values: v})
}

// Resume applies job.Resume: the written-off attempt's one replacement
// of its estimate (see refused), ADDed as any settlement is. A resume
// whose replacement was already made, by an earlier try or by the
// attempt's own late settlement, answers the record unchanged.
func (s *Store) Resume(ctx context.Context, r job.Resume) (job.Job, error) {
	set := r.Settlement()
	set.Cost, set.Held = set.Cost-set.Held, 0
	u := update{cond: "contains(#settled, :wo)", expr: "SET #updated_ms = :upd",
		values: map[string]types.AttributeValue{":wo": avS(r.Of.Owner + writeOffSuffix)}}.settling(r.Of.Owner, "", set)
	u.token, u.settles = replacedToken(r.Of.Owner), job.Settlement{} // refused, it settles nothing
	return s.apply(ctx, r.ID, r.Now, r.Allows, u)
}

// Succeed applies job.Succeed; a refused success still settles its attempt.
func (s *Store) Succeed(ctx context.Context, t job.Succeed) (job.Job, error) {
	v := map[string]types.AttributeValue{":succeeded": st(job.Succeeded), ":one_f": avN(1)}
	held(v, t.Owner)
	e := effect{v: v, set: "SET #state = :succeeded, #progress = :one_f, #updated_ms = :upd",
		remove: unlease + ", #error_class, #error_detail, #act_pk"}
	e.opt(aResult, avS(string(t.Result)), len(t.Result) > 0)
	e.opt(aResultRef, avS(resultRefJSON(t.ResultRef)), t.ResultRef != nil)
	e.opt(aResultModel, avS(t.Model), t.Model != "")
	e.opt(aResultLane, avS(string(t.Lane)), t.Lane != "")
	e.expiry(t.ExpiresAt)
	u := update{cond: heldCond, expr: e.expr(), values: v}
	return s.apply(ctx, t.ID, t.Now, t.Allows, u.settling(t.Owner, "succeed", t.Settlement))
}

// Release applies job.Release; a refused release still settles its attempt.
func (s *Store) Release(ctx context.Context, t job.Release) (job.Job, error) {
	v := map[string]types.AttributeValue{":queued": st(job.Queued), ":class": avS(string(t.Class))}
	held(v, t.Owner)
	e := effect{v: v, set: "SET #state = :queued, #error_class = :class, #updated_ms = :upd", remove: unlease}
	e.detail(t.Detail)
	e.opt(aNotBefore, avN(t.NotBefore.UnixMilli()), !t.NotBefore.IsZero())
	u := update{cond: heldCond, expr: e.expr(), values: v}
	return s.apply(ctx, t.ID, t.Now, t.Allows, u.settling(t.Owner, t.Kind(), t.Settlement))
}

// Defer applies job.Defer: the hold goes back to remaining_nc and the
// attempt is uncounted in the same write. It carries no token: a retried
// defer whose first try landed is refused by the lease it removed, and a
// refused defer settles nothing (it paid nothing), so the hold is
// returned once.
func (s *Store) Defer(ctx context.Context, d job.Defer) (job.Job, error) {
	v := map[string]types.AttributeValue{":queued": st(job.Queued), ":class": avS(string(d.Why())),
		":held": avN(int64(d.Held)), ":one": avN(1)}
	held(v, d.Owner)
	e := effect{v: v, set: "SET #state = :queued, #error_class = :class, #updated_ms = :upd, #remaining_nc = #remaining_nc + :held, #attempts = #attempts - :one",
		remove: unlease}
	e.detail(d.Detail)
	e.opt(aNotBefore, avN(d.NotBefore.UnixMilli()), !d.NotBefore.IsZero())
	return s.apply(ctx, d.ID, d.Now, d.Allows, update{cond: heldCond, expr: e.expr() + " ADD #version :one", values: v})
}

// End applies job.End; a refused end still settles its attempt.
func (s *Store) End(ctx context.Context, t job.End) (job.Job, error) {
	v := map[string]types.AttributeValue{}
	cond := heldCond
	if t.Owner != "" {
		held(v, t.Owner)
	} else {
		cond = unheldCond
		v[":queued"] = st(job.Queued)
		if !t.NotReplayedSince.IsZero() {
			cond = "(" + cond + ") AND (attribute_not_exists(#replayed_ms) OR #replayed_ms < :since)"
			v[":since"] = avN(t.NotReplayedSince.UnixMilli())
		}
	}
	pk, sk := failureKeys(t.ID, t.Class, t.Now, s.shards)
	v[":final"], v[":class"], v[":fpk"], v[":fsk"] = st(t.Class.FinalState()), avS(string(t.Class)), avS(pk), avS(sk)
	e := effect{v: v, set: "SET #state = :final, #error_class = :class, #fail_pk = :fpk, #fail_sk = :fsk, #updated_ms = :upd", remove: unlease + ", #act_pk"}
	e.detail(t.Detail)
	e.expiry(t.ExpiresAt)
	u := update{cond: cond, expr: e.expr(), values: v}
	return s.apply(ctx, t.ID, t.Now, t.Allows, u.settling(t.Owner, "end", t.Settlement))
}

// Cancel applies job.Cancel; another tenant's job is NotFound, exactly like
// a job that does not exist.
func (s *Store) Cancel(ctx context.Context, c job.Cancel) (job.Job, error) {
	pk, sk := failureKeys(c.ID, job.Cancelled, c.Now, s.shards)
	v := map[string]types.AttributeValue{
		":tenant": avS(c.Tenant), ":queued": st(job.Queued), ":running": st(job.Running), ":abandoned": st(job.Abandoned),
		":class": avS(string(job.Cancelled)), ":fpk": avS(pk), ":fsk": avS(sk), ":one": avN(1),
	}
	// A running attempt's lease stays: its settlement, or its write-off,
	// removes it with the hold (job.Cancel).
	e := effect{v: v, set: "SET #state = :abandoned, #error_class = :class, #fail_pk = :fpk, #fail_sk = :fsk, #updated_ms = :upd",
		remove: " REMOVE #error_detail, #act_pk"}
	e.expiry(c.ExpiresAt)
	j, err := s.apply(ctx, c.ID, c.Now, c.Allows, update{
		cond:   "#tenant = :tenant AND (#state = :queued OR #state = :running)",
		expr:   e.expr() + " ADD #version :one",
		values: v,
	})
	if cur, ok := job.ConflictJob(err); ok && cur.Tenant != c.Tenant {
		return job.Job{}, job.NotFound()
	}
	return j, err
}

// WriteOff applies job.WriteOff: the hold it saw is ADDed to the cost
// (remaining_nc, budget - cost - held, does not change), or, void, given
// back to remaining_nc, under a condition on the version it saw.
func (s *Store) WriteOff(ctx context.Context, w job.WriteOff) (job.Job, error) {
	v := map[string]types.AttributeValue{":owner": avS(w.Owner), ":now": avN(w.Now.UnixMilli()), ":v": avN(w.Version),
		":held": avN(int64(w.Held)), ":one": avN(1)}
	expr, remove, add := "SET #updated_ms = :upd", unlease, " ADD #cost_nc :held, #version :one"
	switch {
	case w.Void: // the hold goes back to remaining_nc, as a defer's does
		expr, add = expr+", #remaining_nc = #remaining_nc + :held", " ADD #version :one"
	case w.Held > 0:
		v[":est"] = &types.AttributeValueMemberBOOL{Value: true}
		expr += ", #cost_est = :est"
	}
	if w.State == job.Running {
		v[":queued"], v[":class"], v[":detail"] = st(job.Queued), avS(string(job.Timeout)), avS(w.Detail())
		expr += ", #state = :queued, #error_class = :class, #error_detail = :detail"
		remove += ", #not_before_ms"
	}
	return s.apply(ctx, w.ID, w.Now, w.Allows, update{
		cond:   "#lease_owner = :owner AND #lease_until_ms <= :now AND #version = :v",
		expr:   expr + remove + add,
		values: v,
		token:  w.Owner + writeOffSuffix,
	})
}

// writeOffSuffix marks, in the settled set, a lease owner whose attempt
// was written off (job.Job.WrittenOff).
const writeOffSuffix = "#writeoff"

// replacedToken marks the one replacement of a written-off attempt's
// estimate: by its own late settlement (refused) or by a resume of its
// generation (Resume), whichever lands first; the other is then known as
// applied, so the attempt's cost is on the record once.
func replacedToken(owner string) string { return owner + "#replaced" }

// Replay applies job.Replay: the job leaves the failure index and joins
// the active one again. A replay starts a life whose attempts add to the
// record, and replays are not bounded, so the record is read and measured
// first: one with no room for the life's attempts is refused as
// job.CodeTooLarge before any write (roomForLife). The write is
// conditioned on the version measured, so what is replayed is what was
// measured; a record written meanwhile (a delivery, a late settlement) is
// measured again.
func (s *Store) Replay(ctx context.Context, r job.Replay) (job.Job, error) {
	for range skewRetries {
		cur, raw, err := s.current(ctx, r.ID, nil)
		if err != nil {
			return job.Job{}, err
		}
		if !r.Allows(cur) {
			return job.Job{}, job.Conflict(cur)
		}
		if err := roomForLife(raw, r.Attempts); err != nil {
			return job.Job{}, err
		}
		measured := func(j job.Job) bool { return r.Allows(j) && j.Version == cur.Version }
		got, err := s.apply(ctx, r.ID, r.Now, measured, s.replay(r, cur.Version))
		if now, ok := job.ConflictJob(err); ok && r.Allows(now) && now.Version != cur.Version {
			continue
		}
		return got, err
	}
	return job.Job{}, unavailable("replay job", fmt.Errorf("job %s: kept changing while measured", r.ID))
}

// replay is Replay's write on the record at version v.
func (s *Store) replay(r job.Replay, v int64) update {
	values := map[string]types.AttributeValue{
		":failed": st(job.Failed), ":queued": st(job.Queued), ":n": avN(int64(r.Attempts)), ":deadline": avN(r.Deadline.UnixMilli()),
		":replayed": avN(r.Now.UnixMilli()), ":act": avS(activeKey(r.ID, s.idx.activeShards)), ":one": avN(1), ":zero": avN(0),
		":v": avN(v),
	}
	e := effect{v: values, set: "SET #state = :queued, #max_attempts = #attempts + :n, #deadline_ms = :deadline, #replayed_ms = :replayed, #act_pk = :act, #updated_ms = :upd",
		remove: " REMOVE #fail_pk, #fail_sk, #not_before_ms"}
	e.expiry(r.ExpiresAt)
	return update{
		cond:   "#state = :failed AND " + fitsReserve + " AND #remaining_nc > :zero AND #version = :v",
		expr:   e.expr() + " ADD #replays :one, #version :one",
		values: values,
	}
}

// Nudge applies job.Nudge.
func (s *Store) Nudge(ctx context.Context, n job.Nudge) (job.Job, error) {
	v := map[string]types.AttributeValue{":running": st(job.Running), ":stale": avN(n.Stale.UnixMilli()), ":one": avN(1)}
	cond := "#updated_ms <= :stale AND #state = :running AND #lease_until_ms <= :stale"
	if n.Queued != job.NudgeNone {
		queued := "#state = :queued AND (attribute_not_exists(#not_before_ms) OR #not_before_ms <= :stale)"
		if n.Queued == job.NudgeFirst {
			// nudges is absent until the first nudge ADDs it.
			queued += " AND attribute_not_exists(#nudges)"
		}
		cond = "#updated_ms <= :stale AND ((" + queued + ") OR (#state = :running AND #lease_until_ms <= :stale))"
		v[":queued"] = st(job.Queued)
	}
	return s.apply(ctx, n.ID, n.Now, n.Allows, update{cond: cond, expr: "SET #updated_ms = :upd ADD #nudges :one, #version :one", values: v})
}

// finishToken marks one finishing write of an attempt: its lease owner
// (unique to the attempt) and which finish it is, so only a retry of that
// same write is recognised as already applied, never a different, later
// finish by the same owner (that one is refused and keeps its cost). An
// unowned end has none.
func finishToken(owner, kind string) string {
	if owner == "" {
		return ""
	}
	return owner + "#" + kind
}

// held sets the values heldCond names.
func held(v map[string]types.AttributeValue, owner string) {
	v[":running"], v[":owner"], v[":nobody"] = st(job.Running), avS(owner), avS("")
}

// settling makes u the finishing write of owner's attempt: the same write
// settles set (job.Settlement), and a refused one still does (addCost).
// It is the one place a settlement becomes DynamoDB's words: costAdd adds
// the cost and run time and, in the same ADD to remaining_nc, returns the
// hold (:settle = held - cost); an estimated cost marks the record's cost
// estimated, a mark never cleared (a sum with one estimate in it is an
// estimate). What the attempt saved is ADDed in the same clause (a
// negative amount subtracts), only when it is not zero, so a record whose
// calls never left the standard lane carries no saved_nc. The token
// (finishToken) names the write, so a retry of one that landed is
// recognised. u.expr starts with its SET clause.
func (u update) settling(owner, kind string, set job.Settlement) update {
	u.values = maps.Clone(u.values)
	u.values[":cost"], u.values[":settle"] = avN(int64(set.Cost)), avN(int64(set.Held-set.Cost))
	u.values[":ran"], u.values[":one"] = avN(set.Ran.Milliseconds()), avN(1)
	if set.Estimated {
		u.values[":est"] = &types.AttributeValueMemberBOOL{Value: true}
		u.expr = "SET #cost_est = :est, " + strings.TrimPrefix(u.expr, "SET ")
	}
	u.expr += costAdd
	if set.Saved != 0 {
		u.values[":saved"] = avN(int64(set.Saved))
		u.expr += ", #saved_nc :saved"
	}
	if set.Lane != "" && set.Attempt > 0 {
		u.values[":alane"] = attemptLanesSet(job.AttemptLane{Attempt: set.Attempt, Lane: set.Lane})
		u.expr += ", #attempt_lanes :alane"
	}
	u.owner, u.settles = owner, set
	if kind != "" {
		u.token = finishToken(owner, kind)
	}
	return u
}

// refused is the write that settles a refused finish's attempt on cur
// (job.AddCost): written off, its cost replaces the estimate its hold
// became (cost + cost - held; remaining_nc moves as for any settlement);
// with its lease still on the record, the lease goes too. The condition
// holds the record to what the write was decided from. Its token is the
// refused write's with "+cost".
func (u update) refused(cur job.Job, writtenOff bool) update {
	set := u.settles
	if writtenOff {
		set.Cost, set.Held = set.Cost-set.Held, 0
	}
	v := map[string]types.AttributeValue{":wo": avS(u.owner + writeOffSuffix)}
	cond := "attribute_exists(#id) AND NOT contains(#settled, :wo)"
	if writtenOff {
		cond = "attribute_exists(#id) AND contains(#settled, :wo)"
	}
	remove := ""
	if u.owner != "" && cur.LeaseOwner == u.owner {
		v[":owner"] = avS(u.owner)
		cond += " AND #lease_owner = :owner"
		remove = unlease
	} else if u.owner != "" {
		v[":owner"] = avS(u.owner)
		cond += " AND (attribute_not_exists(#lease_owner) OR #lease_owner <> :owner)"
	}
	r := update{cond: cond, expr: "SET #updated_ms = :upd" + remove, values: v}.settling(u.owner, "", set)
	switch {
	case writtenOff:
		r.token = replacedToken(u.owner)
	case u.token != "":
		r.token = u.token + "+cost"
	}
	return r
}

// costAdd is a settlement's ADD clause (see settling).
const costAdd = " ADD #cost_nc :cost, #remaining_nc :settle, #run_ms :ran, #version :one"

// effect is a write's SET and REMOVE clauses and the values they name,
// built a clause at a time; remove starts with " REMOVE".
type effect struct {
	set, remove string
	v           map[string]types.AttributeValue
}

// opt sets name to val when present, else removes it: the layout keeps no
// empty optional attribute, so a value from an earlier attempt never
// survives one that has none.
func (e *effect) opt(name string, val types.AttributeValue, present bool) {
	if !present {
		e.remove += ", #" + name
		return
	}
	e.v[":"+name] = val
	e.set += ", #" + name + " = :" + name
}

// detail sets or removes error_detail.
func (e *effect) detail(d string) { e.opt(aErrorDetail, avS(d), d != "") }

// expiry sets the TTL attribute (unix seconds) or, for a record kept
// forever (zero ExpiresAt), removes it: a zero time written as seconds
// would be year 1, which a TTL sweeper deletes at once.
func (e *effect) expiry(t time.Time) { e.opt(aExpires, avN(t.Unix()), !t.IsZero()) }

func (e effect) expr() string { return e.set + e.remove }

// RecordDelivery applies job.Delivery in one write when the delivery is the
// newest acknowledged (or a failure), and otherwise counts it without
// touching the acknowledged version: the one precondition is the record's
// existence, so a delivery is never lost from the count.
func (s *Store) RecordDelivery(ctx context.Context, d job.Delivery) (job.Job, error) {
	v := map[string]types.AttributeValue{":one": avN(1), ":status": avN(int64(d.Status))}
	count := update{cond: "attribute_exists(#id)", values: v,
		expr: "SET #updated_ms = :upd, #cb_status = :status ADD #cb_attempts :one, #version :one"}
	exists := func(job.Job) bool { return true }
	if !d.Delivered {
		return s.apply(ctx, d.ID, d.Now, exists, count)
	}
	newer := count
	newer.values = maps.Clone(v)
	newer.values[":v"], newer.values[":at"] = avN(d.Version), avN(job.Millis(d.Now).UnixMilli())
	newer.cond = "attribute_exists(#id) AND (attribute_not_exists(#cb_version) OR #cb_version < :v)"
	newer.expr = "SET #updated_ms = :upd, #cb_status = :status, #cb_version = :v, #cb_delivered_ms = :at ADD #cb_attempts :one, #version :one"
	// A refused "newer" write whose record acknowledges a version at least
	// as new is an older delivery landing late: count it only.
	older := func(cur job.Job) bool { return cur.Deliveries.DeliveredVersion < d.Version }
	got, err := s.apply(ctx, d.ID, d.Now, older, newer)
	if job.ErrorCode(err) == job.CodeConflict {
		return s.apply(ctx, d.ID, d.Now, exists, count)
	}
	return got, err
}
