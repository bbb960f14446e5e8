package dynamodb

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The item layout: one item per job, partition key id.
//
//	id, tenant, request_key, input_hash, model   S
//	input, metadata (optional), result           S, JSON text; input absent when in_key is set
//	in_key, in_sha256, in_size                   S, S, N, only for an input kept in the payload store
//	                                             (job.Job.InputRef, docs/payloads.md): its object's
//	                                             key, "sha256:<hex>" and length; set at create
//	state, lease_owner, error_class, error_detail, result_model   S (optional ones absent when empty)
//	result_lane                                  S, only on a success that named the lane its result
//	                                             was served in; a success naming none removes it
//	attempts, max_attempts, version              N
//	budget_nc, cost_nc, remaining_nc, reserve_nc N, integer nanocents (1e-9 cent). remaining_nc
//	                                             = budget_nc - cost_nc - (holds of attempts in flight);
//	                                             it and cost_nc are only ever changed by ADD or by
//	                                             the claim's "remaining_nc - reserve_nc", never
//	                                             read-modify-written; it exists because conditions
//	                                             cannot do arithmetic. reserve_nc is the worst case
//	                                             one attempt holds, fixed at creation.
//	saved_nc                                     N, integer nanocents the calls cost less than at
//	                                             their rungs' standard prices, summed over attempts
//	                                             (negative: a premium lane cost more); ADDed by
//	                                             the settling write exactly as cost_nc is, absent
//	                                             until an attempt saves (or overpays) anything
//	lanes                                        L of S, the lanes the owner allows, in the order
//	                                             given; set at create, never changed; absent: any
//	attempt_lanes                                SS, "<attempt>:<lane>" per settled attempt that made
//	                                             a call (job.AttemptLane): ADDed by the settling
//	                                             write, a set so a repeated settlement adds nothing
//	                                             (kumo's list_append does nothing); absent until one
//	deadline_ms, lease_until_ms (while running), not_before_ms (a released
//	job's backoff end), created_ms, updated_ms   N, unix milliseconds
//	progress                                     N, 0..1
//	run_ms                                       N, milliseconds attempts ran, summed (ADD)
//	cost_est                                     BOOL, only once true: cost_nc includes an upper
//	                                             estimate for a call whose usage the provider
//	                                             never reported; set by the settling write
//	spend_first                                  S, set by a claim whose worker holds spend limits
//	                                             (their digest and the claim's time,
//	                                             job.Job.SpendFirst); removed by a claim without
//	expires_at                                   N, unix SECONDS (the table's TTL attribute)
//	fail_pk, fail_sk                             S, only once failed or abandoned: the sparse
//	                                             failure index, "<error_class>#<shard>" and
//	                                             "<13-digit ended unix ms>#<id>"
//	act_pk                                       S, only while queued or running: the active
//	                                             index ("active#<shard>", sort key created_ms),
//	                                             the reconciler's worklist
//	crt_pk                                       S, set at create, never changed: the created
//	                                             index ("<UTC yyyy-mm-dd of created_ms>#<shard>",
//	                                             sort key created_ms), what the console's
//	                                             overview and advise --from-table read
//	tnt_pk, tnt_sk                               S, set at create, never changed: the tenant
//	                                             index ("<tenant>#<shard>", and "<13-digit
//	                                             created unix ms>#<id>", unique, so a list's
//	                                             position is one key in every shard), what
//	                                             GET /jobs reads
//	enl_pk, enl_ms                               S, N, only while the job waits in a batch lane to
//	                                             be collected (job.Enlist until job.Collect): the
//	                                             lane (job.LaneKey) and when it was enlisted (unix
//	                                             ms); the sparse enlisted index's keys
//	batch                                        S, the collector's batch the job was collected
//	                                             into (job.Collect), absent before
//	replays, replayed_ms                         N, operator replays of a failed job, and the last
//	nudges                                       N, the reconciler's re-sends of a stuck job
//	cb_url, cb_events                            S, SS, only with a callback: its target, and the
//	                                             states it asked for (absent: the terminal ones)
//	cb_attempts, cb_status                       N, only once delivered to: deliveries tried, and
//	                                             the last one's HTTP status (0: no answer)
//	cb_delivered_ms, cb_version                  N, the newest acknowledged delivery: when, and
//	                                             which version of the job it carried
//	result_ref                                   S, JSON of job.Payload, only once succeeded
//	                                             with an answer too large for the record: where
//	                                             it is in the payload store (docs/payloads.md,
//	                                             "Answers"); result is absent then
//	pending                                      S, JSON of job.Pending, only once an attempt
//	                                             started a generation its provider keeps by id
//	                                             (job.Await); replaced by the next one
//	settled                                      SS, the tokens of every finishing write applied
//	                                             ("<lease owner>#succeed|release|end", "+cost"
//	                                             for a refused one's cost add, "<lease owner>
//	                                             #writeoff" for an attempt written off, "<lease
//	                                             owner>#replaced" once its estimate was replaced
//	                                             by its late settlement or a resume): a write whose
//	                                             token is there is never applied again, and a
//	                                             retried write that was already applied is
//	                                             recognised by it, however many other writes
//	                                             came in between
const (
	aID, aTenant, aRequestKey, aInputHash, aModel = "id", "tenant", "request_key", "input_hash", "model"
	aInput, aMetadata, aResult                    = "input", "metadata", "result"
	aInputKey, aInputSHA256, aInputSize           = "in_key", "in_sha256", "in_size"
	aState, aLeaseOwner, aErrorClass              = "state", "lease_owner", "error_class"
	aErrorDetail, aResultModel, aResultLane       = "error_detail", "result_model", "result_lane"
	aSaved, aLanes, aAttemptLanes                 = "saved_nc", "lanes", "attempt_lanes"
	aAttempts, aMaxAttempts, aVersion             = "attempts", "max_attempts", "version"
	aBudget, aCost, aRemaining, aReserve          = "budget_nc", "cost_nc", "remaining_nc", "reserve_nc"
	aDeadline, aLeaseUntil                        = "deadline_ms", "lease_until_ms"
	aNotBefore                                    = "not_before_ms"
	aCreated, aUpdated, aProgress, aExpires       = "created_ms", "updated_ms", "progress", "expires_at"
	aRunMS, aCostEstimated                        = "run_ms", "cost_est"
	aFailPK, aFailSK                              = "fail_pk", "fail_sk"
	aActivePK, aCreatedPK                         = "act_pk", "crt_pk"
	aTenantPK, aTenantSK                          = "tnt_pk", "tnt_sk"
	aEnlisted, aEnlistedAt, aBatch                = "enl_pk", "enl_ms", "batch"
	aReplays, aReplayed, aNudges                  = "replays", "replayed_ms", "nudges"
	aSettled, aPending                            = "settled", "pending"
	aResultRef                                    = "result_ref"
	aSpendFirst                                   = "spend_first"
	aCallbackURL, aCallbackEvents                 = "cb_url", "cb_events"
	aCallbackAttempts, aCallbackStatus            = "cb_attempts", "cb_status"
	aCallbackDelivered, aCallbackVersion          = "cb_delivered_ms", "cb_version"
)

// FailureProjection lists the attributes the failure index carries besides
// its keys: enough to answer "what did this cost and which inputs caused it".
var FailureProjection = []string{aTenant, aState, aErrorClass, aInputHash, aCost, aAttempts, aModel, aUpdated}

// TenantProjection lists what the tenant index carries besides its keys:
// a job's summary as GET /jobs shows it, with the tenant and the creation
// time (no longer the index's keys). Only attributes that change with the
// state are here (not updated_ms, progress or the lease), so a heartbeat
// never writes to the index.
var TenantProjection = append(slices.Clone(summaryAttributes), aTenant, aCreated)

// summaryAttributes are the attributes of a job's summary (job.Summary)
// that change only with its state, which both summary indexes project.
var summaryAttributes = []string{aState, aRequestKey, aInputHash, aModel, aAttempts, aMaxAttempts, aCost, aBudget,
	aErrorClass, aResultModel, aDeadline, aReplays}

// CreatedProjection lists what the created index carries besides its
// keys: job.Summary, which is the summary the tenant index carries, the
// tenant and the run time. Like the tenant index's, none of it changes with a
// heartbeat: the run time grows only when an attempt settles.
var CreatedProjection = append(slices.Clone(summaryAttributes), aTenant, aRunMS)

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func avN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func avF(v float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
}
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func toItem(j job.Job, idx indexes) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		aID: avS(j.ID), aTenant: avS(j.Tenant), aRequestKey: avS(j.RequestKey), aInputHash: avS(j.InputHash), aModel: avS(j.Model),
		aState: avS(string(j.State)), aAttempts: avN(int64(j.Attempts)), aMaxAttempts: avN(int64(j.MaxAttempts)), aVersion: avN(j.Version),
		aBudget: avN(int64(j.Budget)), aCost: avN(int64(j.Cost)), aRemaining: avN(int64(j.Budget - j.Cost - j.Held)),
		aReserve: avN(int64(j.Reserve)), aRunMS: avN(j.RunTime.Milliseconds()),
		aDeadline: avN(ms(j.Deadline)), aCreated: avN(ms(j.CreatedAt)), aUpdated: avN(ms(j.UpdatedAt)),
		aProgress: avF(j.Progress),
	}
	opt := func(k, v string) {
		if v != "" {
			it[k] = avS(v)
		}
	}
	inputAttributes(it, j)
	opt(aMetadata, string(j.Metadata))
	resultAttributes(it, j)
	opt(aLeaseOwner, j.LeaseOwner)
	opt(aErrorClass, string(j.ErrorClass))
	opt(aErrorDetail, j.ErrorDetail)
	opt(aEnlisted, j.Enlisted)
	opt(aBatch, j.Batch)
	opt(aSpendFirst, j.SpendFirst)
	if !j.EnlistedAt.IsZero() {
		it[aEnlistedAt] = avN(ms(j.EnlistedAt))
	}
	if j.Saved != 0 {
		it[aSaved] = avN(int64(j.Saved))
	}
	if len(j.Lanes) > 0 {
		it[aLanes] = lanesList(j.Lanes)
	}
	if len(j.AttemptLanes) > 0 {
		it[aAttemptLanes] = attemptLanesSet(j.AttemptLanes...)
	}
	if !j.LeaseUntil.IsZero() {
		it[aLeaseUntil] = avN(ms(j.LeaseUntil))
	}
	if !j.NotBefore.IsZero() {
		it[aNotBefore] = avN(ms(j.NotBefore))
	}
	if !j.ExpiresAt.IsZero() {
		it[aExpires] = avN(j.ExpiresAt.Unix())
	}
	if !j.State.Terminal() {
		it[aActivePK] = avS(activeKey(j.ID, idx.activeShards))
	}
	if !j.CreatedAt.IsZero() {
		it[aCreatedPK] = avS(createdKey(j.ID, j.CreatedAt, idx.createdShards))
	}
	if j.Tenant != "" {
		it[aTenantPK], it[aTenantSK] = tenantKeys(j.Tenant, j.ID, j.CreatedAt, idx.tenantShards)
	}
	if j.Replays != 0 {
		it[aReplays] = avN(int64(j.Replays))
	}
	if j.Nudges != 0 {
		it[aNudges] = avN(int64(j.Nudges))
	}
	if j.CostEstimated {
		it[aCostEstimated] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if !j.ReplayedAt.IsZero() {
		it[aReplayed] = avN(ms(j.ReplayedAt))
	}
	if len(j.WrittenOff) > 0 { // the write-offs' tokens (fromItem)
		toks := make([]string, len(j.WrittenOff))
		for i, owner := range j.WrittenOff {
			toks[i] = owner + writeOffSuffix
		}
		it[aSettled] = &types.AttributeValueMemberSS{Value: toks}
	}
	if j.Pending != nil {
		b, _ := json.Marshal(j.Pending) // plain strings and numbers: cannot fail
		it[aPending] = avS(string(b))
	}
	callbackAttributes(it, j)
	return it
}

// inputAttributes adds a job's input: inline, or the payload store's
// pointer to it, never both (the pointer is what keeps a heartbeat's write
// units flat, docs/payloads.md, "Thresholds").
func inputAttributes(it map[string]types.AttributeValue, j job.Job) {
	if j.InputRef == nil {
		it[aInput] = avS(string(j.Input))
		return
	}
	it[aInputKey], it[aInputSHA256], it[aInputSize] = avS(j.InputRef.Key), avS(j.InputRef.SHA256), avN(j.InputRef.Size)
}

// lanesList is the owner's allowed lanes as a list rather than a string
// set: a set would lose the order they were given in.
func lanesList(ls []job.Lane) types.AttributeValue {
	l := make([]types.AttributeValue, len(ls))
	for i, lane := range ls {
		l[i] = avS(string(lane))
	}
	return &types.AttributeValueMemberL{Value: l}
}

// attemptLanesSet is ls as attempt_lanes' string set.
func attemptLanesSet(ls ...job.AttemptLane) types.AttributeValue {
	ss := make([]string, len(ls))
	for i, l := range ls {
		ss[i] = strconv.Itoa(l.Attempt) + ":" + string(l.Lane)
	}
	return &types.AttributeValueMemberSS{Value: ss}
}

// callbackAttributes adds a job's callback and its deliveries to it.
func callbackAttributes(it map[string]types.AttributeValue, j job.Job) {
	if j.Callback.URL == "" {
		return
	}
	it[aCallbackURL] = avS(j.Callback.URL)
	if len(j.Callback.Events) > 0 {
		ss := make([]string, len(j.Callback.Events))
		for i, e := range j.Callback.Events {
			ss[i] = string(e)
		}
		it[aCallbackEvents] = &types.AttributeValueMemberSS{Value: ss}
	}
	d := j.Deliveries
	if d.Attempts != 0 {
		it[aCallbackAttempts], it[aCallbackStatus] = avN(int64(d.Attempts)), avN(int64(d.LastStatus))
	}
	if d.DeliveredVersion != 0 {
		it[aCallbackDelivered], it[aCallbackVersion] = avN(ms(d.DeliveredAt)), avN(d.DeliveredVersion)
	}
}

func fromItem(it map[string]types.AttributeValue) (job.Job, error) {
	d := &decoder{it: it}
	j := job.Job{
		ID: d.str(aID), Tenant: d.str(aTenant), RequestKey: d.str(aRequestKey), InputHash: d.str(aInputHash), Model: d.str(aModel),
		Input: d.raw(aInput), Metadata: d.raw(aMetadata), Result: d.raw(aResult),
		State: job.State(d.str(aState)), LeaseOwner: d.str(aLeaseOwner), ErrorClass: job.ErrorClass(d.str(aErrorClass)),
		ErrorDetail: d.str(aErrorDetail), ResultModel: d.str(aResultModel), ResultLane: job.Lane(d.str(aResultLane)),
		Attempts: int(d.num(aAttempts)), MaxAttempts: int(d.num(aMaxAttempts)), Version: d.num(aVersion),
		Budget: job.Nanocents(d.num(aBudget)), Cost: job.Nanocents(d.num(aCost)), Reserve: job.Nanocents(d.num(aReserve)),
		Saved: job.Nanocents(d.num(aSaved)), Lanes: d.lanes(aLanes), AttemptLanes: d.attemptLanes(aAttemptLanes),
		RunTime:  time.Duration(d.num(aRunMS)) * time.Millisecond,
		Deadline: d.t(aDeadline), LeaseUntil: d.t(aLeaseUntil), NotBefore: d.t(aNotBefore), CreatedAt: d.t(aCreated), UpdatedAt: d.t(aUpdated),
		Progress: d.float(aProgress), Replays: int(d.num(aReplays)), ReplayedAt: d.t(aReplayed), Nudges: int(d.num(aNudges)),
		Enlisted: d.str(aEnlisted), EnlistedAt: d.t(aEnlistedAt), Batch: d.str(aBatch), SpendFirst: d.str(aSpendFirst),
	}
	if k := d.str(aInputKey); k != "" {
		j.InputRef = &job.Payload{Key: k, SHA256: d.str(aInputSHA256), Size: d.num(aInputSize)}
	}
	if b, ok := it[aCostEstimated].(*types.AttributeValueMemberBOOL); ok {
		j.CostEstimated = b.Value
	}
	if ss, ok := it[aSettled].(*types.AttributeValueMemberSS); ok {
		for _, tok := range ss.Value {
			if owner, ok := strings.CutSuffix(tok, writeOffSuffix); ok {
				j.WrittenOff = append(j.WrittenOff, owner)
			}
		}
		slices.Sort(j.WrittenOff) // a set has no order
	}
	j.ResultRef = d.resultRef()
	if p := d.str(aPending); p != "" {
		j.Pending = new(job.Pending)
		if err := json.Unmarshal([]byte(p), j.Pending); err != nil && d.err == nil {
			d.err = fmt.Errorf("%s: %w", aPending, err)
		}
	}
	if r, ok := it[aRemaining]; ok && r != nil {
		// The table keeps what is left, not what is held (a condition
		// cannot subtract): the one place remaining_nc becomes Held.
		j.Held = j.Budget - j.Cost - job.Nanocents(d.num(aRemaining))
	}
	if e := d.num(aExpires); e != 0 {
		j.ExpiresAt = time.Unix(e, 0).UTC()
	}
	j.Callback.URL = d.str(aCallbackURL)
	if ss, ok := it[aCallbackEvents].(*types.AttributeValueMemberSS); ok {
		events := make([]job.State, len(ss.Value))
		for i, e := range ss.Value {
			events[i] = job.State(e)
		}
		j.Callback.Events = job.CanonicalEvents(events) // a set has no order
	}
	j.Deliveries = job.Deliveries{Attempts: int(d.num(aCallbackAttempts)), LastStatus: int(d.num(aCallbackStatus)),
		DeliveredAt: d.t(aCallbackDelivered), DeliveredVersion: d.num(aCallbackVersion)}
	err := d.err
	if err == nil && (j.ID == "" || !j.State.Valid()) {
		err = fmt.Errorf("no id or no valid state (%q)", j.State)
	}
	if err != nil {
		return job.Job{}, fmt.Errorf("decode job item: %w", err)
	}
	return j, nil
}

// decoder reads an item's attributes by name, an absent or mistyped one as
// its zero value, and keeps the first number that does not parse.
type decoder struct {
	it  map[string]types.AttributeValue
	err error
}

func (d *decoder) str(k string) string {
	if v, ok := d.it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (d *decoder) num(k string) int64 {
	v, ok := d.it[k].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	x, err := strconv.ParseInt(v.Value, 10, 64)
	d.fail(k, err)
	return x
}

// lanes reads the allowed lanes. Unlike the other attributes, a mistyped
// value or element is refused, not read as absent: no lanes allows every
// lane, so reading a damaged restriction as none would lift it.
func (d *decoder) lanes(k string) []job.Lane {
	v, ok := d.it[k]
	if !ok {
		return nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		d.fail(k, fmt.Errorf("a %T, not a list", v))
		return nil
	}
	var out []job.Lane
	for i, e := range l.Value {
		s, ok := e.(*types.AttributeValueMemberS)
		if !ok {
			d.fail(k, fmt.Errorf("element %d is a %T, not a string", i, e))
			return nil
		}
		out = append(out, job.Lane(s.Value))
	}
	return out
}

// attemptLanes reads attempt_lanes' "<attempt>:<lane>" strings, in
// attempt order; an element of another shape is refused.
func (d *decoder) attemptLanes(k string) []job.AttemptLane {
	v, ok := d.it[k].(*types.AttributeValueMemberSS)
	if !ok {
		return nil
	}
	var out []job.AttemptLane
	for _, e := range v.Value {
		n, lane, found := strings.Cut(e, ":")
		a, err := strconv.Atoi(n)
		if !found || err != nil || a < 1 {
			d.fail(k, fmt.Errorf("element %q is not <attempt>:<lane>", e))
			return nil
		}
		out = job.WithAttemptLane(out, job.AttemptLane{Attempt: a, Lane: job.Lane(lane)})
	}
	return out
}

func (d *decoder) float(k string) float64 {
	v, ok := d.it[k].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	x, err := strconv.ParseFloat(v.Value, 64)
	d.fail(k, err)
	return x
}

func (d *decoder) raw(k string) json.RawMessage {
	if v := d.str(k); v != "" {
		return json.RawMessage(v)
	}
	return nil
}

// t reads a time kept as unix milliseconds; 0 is no time.
func (d *decoder) t(k string) time.Time {
	if v := d.num(k); v != 0 {
		return time.UnixMilli(v).UTC()
	}
	return time.Time{}
}

func (d *decoder) fail(k string, err error) {
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("attribute %s: %w", k, err)
	}
}

// failureKeys are the sparse index keys of a job that ended at t.
func failureKeys(id string, class job.ErrorClass, t time.Time, shards int) (pk, sk string) {
	return fmt.Sprintf("%s#%d", class, shard(id, shards)), fmt.Sprintf("%013d#%s", t.UnixMilli(), id)
}

// activeKey is the active index's partition key of an unfinished job.
func activeKey(id string, shards int) string {
	return fmt.Sprintf("active#%d", shard(id, shards))
}

// createdKey is the created index's partition: the UTC day the job was
// created and its shard. A day per partition key keeps each key's items
// to one day's jobs, so a read of the last two days touches two days'
// partitions whatever the table holds.
func createdKey(id string, created time.Time, shards int) string {
	return createdDay(created) + "#" + strconv.Itoa(shard(id, shards))
}

// tenantKeys are the tenant index's keys of a job: its tenant and shard,
// so one tenant's writes spread over shards partitions, and a sort key
// that orders its jobs newest first with ties broken by id, as the memory
// store orders them.
func tenantKeys(tenant, id string, created time.Time, shards int) (pk, sk types.AttributeValue) {
	return avS(tenantShardKey(tenant, shard(id, shards))), avS(listPosition(ms(created), id))
}

// tenantShardKey is the partition key of one of a tenant's shards. A tenant
// containing '#' cannot take another's key: the shard is what follows the
// last '#'.
func tenantShardKey(tenant string, n int) string { return tenant + "#" + strconv.Itoa(n) }

// listPosition is the tenant index's sort key of the job id created at
// createdMS: 13 digits of unix milliseconds sort as numbers until 2286.
func listPosition(createdMS int64, id string) string { return fmt.Sprintf("%013d#%s", createdMS, id) }

func createdDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// shard spreads ids over n partitions, the same way every time.
func shard(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(max(n, 1)))
}
