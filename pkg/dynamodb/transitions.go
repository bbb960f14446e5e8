package dynamodb

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The conditions below state, in DynamoDB's words, exactly the Allows
// predicates of pkg/job; the conformance suite holds the two equal.
const (
	heldCond   = "#state = :running AND #lease_owner = :owner"
	unheldCond = "#state = :queued OR (#state = :running AND #lease_until_ms <= :now)"
	claimCond  = "(" + unheldCond + ") AND #attempts < #max_attempts AND #deadline_ms > :now AND #cost_nc < #budget_nc AND #remaining_nc >= :reserve"
	unlease    = " REMOVE #lease_owner, #lease_until_ms"
)

func st(v job.State) types.AttributeValue { return avS(string(v)) }

// Claim applies job.Claim.
func (s *Store) Claim(ctx context.Context, c job.Claim) (job.Job, error) {
	return s.apply(ctx, c.ID, c.Now, c.Allows, update{
		cond: claimCond,
		expr: "SET #state = :running, #lease_owner = :owner, #lease_until_ms = :lease, #progress = :zero, #updated_ms = :upd ADD #attempts :one, #version :one",
		values: map[string]types.AttributeValue{
			":queued": st(job.Queued), ":running": st(job.Running), ":now": avN(c.Now.UnixMilli()), ":reserve": avN(int64(c.Reserve)),
			":owner": avS(c.Owner), ":lease": avN(c.LeaseUntil.UnixMilli()), ":zero": avN(0), ":one": avN(1),
		},
	}, 0)
}

// Heartbeat applies job.Heartbeat.
func (s *Store) Heartbeat(ctx context.Context, h job.Heartbeat) (job.Job, error) {
	p := job.Heartbeat{Progress: h.Progress}.Apply(job.Job{}).Progress // clamped as the domain clamps it
	return s.apply(ctx, h.ID, h.Now, h.Allows, update{
		cond: heldCond,
		expr: "SET #lease_until_ms = :lease, #progress = :progress, #updated_ms = :upd ADD #version :one",
		values: map[string]types.AttributeValue{
			":running": st(job.Running), ":owner": avS(h.Owner), ":lease": avN(h.LeaseUntil.UnixMilli()), ":progress": avF(p), ":one": avN(1),
		},
	}, 0)
}

// Succeed applies job.Succeed; a refused success still adds its cost.
func (s *Store) Succeed(ctx context.Context, t job.Succeed) (job.Job, error) {
	v := costValues(t.Cost)
	v[":running"], v[":owner"], v[":succeeded"] = st(job.Running), avS(t.Owner), st(job.Succeeded)
	v[":result"], v[":one_f"], v[":exp"] = avS(string(t.Result)), avN(1), avN(t.ExpiresAt.Unix())
	expr := "SET #state = :succeeded, #result = :result, #progress = :one_f, #expires_at = :exp, #updated_ms = :upd"
	remove := " REMOVE #lease_owner, #lease_until_ms, #error_class, #error_detail"
	if t.Model != "" {
		expr += ", #result_model = :model"
		v[":model"] = avS(t.Model)
	} else {
		remove += ", #result_model"
	}
	return s.apply(ctx, t.ID, t.Now, t.Allows, update{cond: heldCond, expr: expr + remove + costAdd, values: v, token: finishToken(t.Owner)}, t.Cost)
}

// Release applies job.Release; a refused release still adds its cost.
func (s *Store) Release(ctx context.Context, t job.Release) (job.Job, error) {
	v := costValues(t.Cost)
	v[":running"], v[":owner"], v[":queued"], v[":class"] = st(job.Running), avS(t.Owner), st(job.Queued), avS(string(t.Class))
	expr, remove := "SET #state = :queued, #error_class = :class, #updated_ms = :upd", unlease
	expr, remove = detail(expr, remove, t.Detail, v)
	return s.apply(ctx, t.ID, t.Now, t.Allows, update{cond: heldCond, expr: expr + remove + costAdd, values: v, token: finishToken(t.Owner)}, t.Cost)
}

// End applies job.End; a refused end still adds its cost.
func (s *Store) End(ctx context.Context, t job.End) (job.Job, error) {
	v := costValues(t.Cost)
	cond := heldCond
	v[":running"] = st(job.Running)
	if t.Owner != "" {
		v[":owner"] = avS(t.Owner)
	} else {
		cond = unheldCond
		v[":queued"], v[":now"] = st(job.Queued), avN(t.Now.UnixMilli())
	}
	pk, sk := failureKeys(t.ID, t.Class, t.Now, s.shards)
	v[":final"], v[":class"], v[":exp"], v[":fpk"], v[":fsk"] = st(t.Class.FinalState()), avS(string(t.Class)), avN(t.ExpiresAt.Unix()), avS(pk), avS(sk)
	expr, remove := "SET #state = :final, #error_class = :class, #expires_at = :exp, #fail_pk = :fpk, #fail_sk = :fsk, #updated_ms = :upd", unlease
	expr, remove = detail(expr, remove, t.Detail, v)
	return s.apply(ctx, t.ID, t.Now, t.Allows, update{cond: cond, expr: expr + remove + costAdd, values: v, token: finishToken(t.Owner)}, t.Cost)
}

// Cancel applies job.Cancel; another tenant's job is NotFound, exactly like
// a job that does not exist.
func (s *Store) Cancel(ctx context.Context, c job.Cancel) (job.Job, error) {
	pk, sk := failureKeys(c.ID, job.Cancelled, c.Now, s.shards)
	j, err := s.apply(ctx, c.ID, c.Now, c.Allows, update{
		cond: "#tenant = :tenant AND (#state = :queued OR #state = :running)",
		expr: "SET #state = :abandoned, #error_class = :class, #expires_at = :exp, #fail_pk = :fpk, #fail_sk = :fsk, #updated_ms = :upd" +
			" REMOVE #lease_owner, #lease_until_ms, #error_detail ADD #version :one",
		values: map[string]types.AttributeValue{
			":tenant": avS(c.Tenant), ":queued": st(job.Queued), ":running": st(job.Running), ":abandoned": st(job.Abandoned),
			":class": avS(string(job.Cancelled)), ":exp": avN(c.ExpiresAt.Unix()), ":fpk": avS(pk), ":fsk": avS(sk), ":one": avN(1),
		},
	}, 0)
	if cur, ok := job.ConflictJob(err); ok && cur.Tenant != c.Tenant {
		return job.Job{}, &job.Error{Code: job.CodeNotFound, Message: "no such job"}
	}
	return j, err
}

// finishToken marks the one finishing write of an attempt (its lease owner
// is unique to it); an unowned end has none.
func finishToken(owner string) string {
	if owner == "" {
		return ""
	}
	return owner + "#finish"
}

const costAdd = " ADD #cost_nc :cost, #remaining_nc :negcost, #version :one"

func costValues(c job.Nanocents) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{":cost": avN(int64(c)), ":negcost": avN(-int64(c)), ":one": avN(1)}
}

// detail sets error_detail when there is one and removes a stale one
// otherwise (DynamoDB stores no empty strings in our layout).
func detail(expr, remove, d string, v map[string]types.AttributeValue) (string, string) {
	if d == "" {
		return expr, remove + ", #error_detail"
	}
	v[":detail"] = avS(d)
	return expr + ", #error_detail = :detail", remove
}
