package dynamodb

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The collectors' batch records (job.BatchRecord) live in the buckets
// table beside the providers' buckets and the tenants' slots: one item
// per batch, keyed "batch#<id>", and one item, keyed "batches#open",
// whose string set holds the ids of the batches not yet settled, so a
// collector's run finds what to carry on with in one read and one more
// per open batch (a few per lane), without a scan or an index. Neither
// key can be a provider's (a provider's name has no '#') or a tenant's
// slots' ("tenant#<kind>#<shard>#<tenant>"), nor each other's.
//
//	provider                       S, "batch#<id>" (the table's key)
//	lane, batch_provider, model    S, the batch's lane (job.LaneKey), provider and model
//	state                          S, job.BatchState
//	provider_id                    S, the provider's batch id, once submitted
//	jobs, held                     L of S, L of N, the jobs' ids (job.BatchJob) in the order
//	                               given, and each one's hold at the same place (nanocents):
//	                               two lists, not one of maps, because a map's names would
//	                               not leave room for job.MaxBatchJobs of them (itemSize);
//	                               absent while there are none
//	hand_back_ms                   N, unix milliseconds: job.BatchRecord.HandBackAt, absent when zero
//	sealed_ms                      N, unix milliseconds: job.BatchRecord.SealedAt, absent until sealed
//	refusal, refusal_detail        S, the provider's refusal to make it (job.BatchRecord.Refusal, its
//	                               RefusalDetail), absent for a batch it took
//	created_ms, updated_ms         N, unix milliseconds
//
// The record is written before the open list names it, so every id the
// list holds has its record; a record that leaves the list (settled) is
// written first too, so the list may name a settled batch for a moment,
// never miss an open one.
const (
	batchPrefix    = "batch#"
	openBatchesKey = "batches#open"
	bOpen          = "open"
	bLane          = "lane"
	bBatchProvider = "batch_provider"
	bModel         = "model"
	bState         = "state"
	bProviderID    = "provider_id"
	bJobs          = "jobs"
	bHeld          = "held"
	bHandBack      = "hand_back_ms"
	bSealed        = "sealed_ms"
	bRefusal       = "refusal"
	bRefusalDetail = "refusal_detail"
	bCreated       = "created_ms"
	bUpdated       = "updated_ms"
)

// BatchClient is the part of the DynamoDB API the batch records store
// calls.
type BatchClient interface {
	GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
}

// Batches are the collectors' batch records in the buckets table.
type Batches struct{ t side }

// NewBatches returns the batch records store over the buckets table.
func NewBatches(c BatchClient, table string) *Batches {
	return &Batches{t: side{layout: bucketsLayout, table: table, get: c, put: c, update: c}}
}

// keyed conditions a put on an item of the key being there (exists) or
// not.
func keyed(exists bool) *expr {
	e := newExpr()
	if exists {
		e.when("attribute_exists(" + e.name(bProvider) + ")")
	} else {
		e.when("attribute_not_exists(" + e.name(bProvider) + ")")
	}
	return e
}

// OpenBatch puts r unless a batch with its id exists (then
// job.CodeConflict), and lists it open. A caller that died between the
// two writes, or lost the answer, and opens again is answered Conflict
// with the batch listed: the retry finishes what the first try began.
func (b *Batches) OpenBatch(ctx context.Context, r job.BatchRecord) error {
	it, err := batchItem(r)
	if err != nil {
		return err
	}
	o, err := b.t.write(ctx, "put batch", it, keyed(false))
	switch {
	case err != nil:
		return err
	case !o.refused:
		return b.list(ctx, r.ID, true)
	}
	cur, found, err := b.read(ctx, r.ID, o.item)
	if err != nil {
		return err
	}
	if found && cur.State != job.Settled {
		if err := b.list(ctx, r.ID, true); err != nil {
			return err
		}
	}
	return &job.Error{Code: job.CodeConflict, Message: "a batch with this id exists"}
}

// SaveBatch overwrites the record of a batch opened before
// (job.CodeNotFound for one never opened: a save never creates a batch
// that no open listed); one saved Settled leaves the open list.
func (b *Batches) SaveBatch(ctx context.Context, r job.BatchRecord) error {
	it, err := batchItem(r)
	if err != nil {
		return err
	}
	o, err := b.t.write(ctx, "save batch", it, keyed(true))
	switch {
	case err != nil:
		return err
	case o.refused:
		return &job.Error{Code: job.CodeNotFound, Message: "no batch with this id was opened"}
	}
	return b.list(ctx, r.ID, r.State != job.Settled)
}

// Batches answers every open batch record (State not Settled), oldest
// first, read consistently. An id the list names whose record is settled
// (its save died before the list was told) or gone is dropped from the
// list here.
func (b *Batches) Batches(ctx context.Context) ([]job.BatchRecord, error) {
	open, err := b.t.read(ctx, "read open batches", b.t.key(openBatchesKey), true)
	if err != nil {
		return nil, err
	}
	set, _ := open[bOpen].(*types.AttributeValueMemberSS)
	if set == nil {
		return nil, nil
	}
	var rs []job.BatchRecord
	for _, id := range set.Value {
		r, found, err := b.read(ctx, id, nil)
		if err != nil {
			return nil, err
		}
		if !found || r.State == job.Settled {
			if err := b.list(ctx, id, false); err != nil {
				return nil, err
			}
			continue
		}
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(x, y job.BatchRecord) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), strings.Compare(x.ID, y.ID))
	})
	return rs, nil
}

// read is batch id's record: it when a refused write returned it, else a
// consistent read; found is false when there is none.
func (b *Batches) read(ctx context.Context, id string, it map[string]types.AttributeValue) (job.BatchRecord, bool, error) {
	it, err := b.t.standing(ctx, "read batch", b.t.key(batchPrefix+id), it)
	if err != nil || len(it) == 0 {
		return job.BatchRecord{}, false, err
	}
	r, err := batchOf(it)
	return r, err == nil, err
}

// list adds id to the open list, or (open false) deletes it: a set's ADD
// and DELETE need no read and no condition, and repeat harmlessly.
func (b *Batches) list(ctx context.Context, id string, open bool) error {
	e := newExpr()
	op := e.name(bOpen) + " " + e.value("id", stringSet(id))
	if open {
		e.add = append(e.add, op)
	} else {
		e.del = append(e.del, op)
	}
	_, err := b.t.change(ctx, "list open batches", b.t.key(openBatchesKey), e)
	return err
}

// batchItem is r's item, refused before any write when it has no id or
// holds more jobs than a record may (job.MaxBatchJobs) or DynamoDB takes.
func batchItem(r job.BatchRecord) (map[string]types.AttributeValue, error) {
	if r.ID == "" {
		return nil, &job.Error{Code: job.CodeInvalidRequest, Field: "id", Message: "a batch record needs an id"}
	}
	if len(r.Jobs) > job.MaxBatchJobs {
		return nil, tooLarge(fmt.Errorf("dynamodb: batch %s holds %d jobs, over the %d a record keeps", r.ID, len(r.Jobs), job.MaxBatchJobs))
	}
	it := map[string]types.AttributeValue{
		bProvider: avS(batchPrefix + r.ID), bLane: avS(r.Lane), bBatchProvider: avS(r.Provider), bModel: avS(r.Model),
		bState: avS(string(r.State)), bCreated: avN(ms(r.CreatedAt)), bUpdated: avN(ms(r.UpdatedAt)),
	}
	if r.ProviderID != "" {
		it[bProviderID] = avS(r.ProviderID)
	}
	if !r.HandBackAt.IsZero() {
		it[bHandBack] = avN(ms(r.HandBackAt))
	}
	if !r.SealedAt.IsZero() {
		it[bSealed] = avN(ms(r.SealedAt))
	}
	if r.Refusal != "" {
		it[bRefusal] = avS(string(r.Refusal))
	}
	if r.RefusalDetail != "" {
		it[bRefusalDetail] = avS(r.RefusalDetail)
	}
	if len(r.Jobs) > 0 {
		ids, held := make([]types.AttributeValue, len(r.Jobs)), make([]types.AttributeValue, len(r.Jobs))
		for i, bj := range r.Jobs {
			ids[i], held[i] = avS(bj.ID), avN(int64(bj.Held))
		}
		it[bJobs], it[bHeld] = &types.AttributeValueMemberL{Value: ids}, &types.AttributeValueMemberL{Value: held}
	}
	if n := itemSize(it); n > maxItemBytes {
		return nil, overLimit("batch "+r.ID, n, maxItemBytes)
	}
	return it, nil
}

// batchOf decodes a batch record's item.
func batchOf(it map[string]types.AttributeValue) (job.BatchRecord, error) {
	d := &decoder{it: it}
	id, ok := strings.CutPrefix(d.str(bProvider), batchPrefix)
	r := job.BatchRecord{ID: id, Lane: d.str(bLane), Provider: d.str(bBatchProvider), Model: d.str(bModel),
		State: job.BatchState(d.str(bState)), ProviderID: d.str(bProviderID), HandBackAt: d.t(bHandBack),
		SealedAt: d.t(bSealed), CreatedAt: d.t(bCreated), UpdatedAt: d.t(bUpdated),
		Refusal: job.ErrorClass(d.str(bRefusal)), RefusalDetail: d.str(bRefusalDetail)}
	r.Jobs = batchJobsOf(d)
	if d.err == nil && (!ok || id == "") {
		d.err = fmt.Errorf("key %q is not a batch's", d.str(bProvider))
	}
	if d.err != nil {
		return job.BatchRecord{}, &job.Error{Code: job.CodeInternal, Message: "a batch record could not be read",
			Err: fmt.Errorf("dynamodb: decode batch item: %w", d.err)}
	}
	return r, nil
}

// batchJobsOf reads a batch record's two lists of its jobs. Unlike a
// job's optional attributes, a mistyped element or lists of unequal
// lengths are refused, not read as absent: a job's hold read as 0 would
// be a settlement that returns nothing.
func batchJobsOf(d *decoder) []job.BatchJob {
	ids, _ := d.it[bJobs].(*types.AttributeValueMemberL)
	held, _ := d.it[bHeld].(*types.AttributeValueMemberL)
	if ids == nil && held == nil {
		return nil
	}
	if ids == nil || held == nil || len(ids.Value) != len(held.Value) {
		d.fail(bJobs, fmt.Errorf("the jobs and held lists do not pair up"))
		return nil
	}
	out := make([]job.BatchJob, len(ids.Value))
	for i := range ids.Value {
		id, isS := ids.Value[i].(*types.AttributeValueMemberS)
		n, isN := held.Value[i].(*types.AttributeValueMemberN)
		if !isS || !isN {
			d.fail(bJobs, fmt.Errorf("element %d is not an id and a number", i))
			return nil
		}
		x, err := strconv.ParseInt(n.Value, 10, 64)
		d.fail(bHeld, err)
		out[i] = job.BatchJob{ID: id.Value, Held: job.Nanocents(x)}
	}
	return out
}
