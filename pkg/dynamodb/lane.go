package dynamodb

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The batch lane on the jobs table (docs/decisions.md, "The batch lane's design"):
// an enlisted job carries enl_pk (its lane, job.LaneKey) and enl_ms (when
// it was enlisted), the keys of the sparse enlisted index, so a collector
// reads only the jobs that wait, oldest first; a collect removes both, so
// the index holds nothing else. Membership of a batch is on the job
// (batch), not on the batch record: a batch's jobs would not fit one item.

// Enlist applies job.Enlist: the attempt's lease passes to the batch lane
// (job.BatchOwner) until e.Until, and the job joins the enlisted index. A
// retry whose first try landed (its answer lost) is refused like any
// other: the record it carries is then held by BatchOwner(e.Owner), which
// only that attempt's enlist can have written.
func (s *Store) Enlist(ctx context.Context, e job.Enlist) (job.Job, error) {
	if e.Lane == "" {
		// No record allows it; DynamoDB would refuse an empty index key
		// before it looked at the condition.
		return s.refuse(ctx, e.ID)
	}
	v := map[string]types.AttributeValue{
		":batch_owner": avS(job.BatchOwner(e.Owner)), ":until": avN(ms(e.Until)),
		":lane": avS(e.Lane), ":enlisted": avN(ms(e.Now)), ":one": avN(1),
	}
	held(v, e.Owner)
	return s.apply(ctx, e.ID, e.Now, e.Allows, update{
		cond:   heldCond,
		expr:   "SET #lease_owner = :batch_owner, #lease_until_ms = :until, #enl_pk = :lane, #enl_ms = :enlisted, #updated_ms = :upd ADD #version :one",
		values: v,
	})
}

// Collect applies job.Collect: the job is marked with its batch, its
// lease passes to the batch (job.BatchOwner of the batch id) and it
// leaves the enlisted index, all in one write, so it is collected into
// one batch at most; a second collect (another collector, or a retry) is
// refused with the record, whose Batch says where it went.
func (s *Store) Collect(ctx context.Context, c job.Collect) (job.Job, error) {
	if c.Batch == "" {
		return s.refuse(ctx, c.ID)
	}
	v := map[string]types.AttributeValue{":batch": avS(c.Batch), ":batch_owner": avS(job.BatchOwner(c.Batch)), ":one": avN(1)}
	held(v, c.Owner)
	return s.apply(ctx, c.ID, c.Now, c.Allows, update{
		cond:   heldCond + " AND attribute_exists(#enl_pk)",
		expr:   "SET #batch = :batch, #lease_owner = :batch_owner, #updated_ms = :upd REMOVE #enl_pk, #enl_ms ADD #version :one",
		values: v,
	})
}

// refuse answers a transition that no record allows (its own arguments
// break the precondition) as a refused write is answered: Conflict with
// the record as it is, or NotFound.
func (s *Store) refuse(ctx context.Context, id string) (job.Job, error) {
	cur, _, err := s.current(ctx, id, nil)
	if err != nil {
		return job.Job{}, err
	}
	return job.Job{}, job.Conflict(cur)
}

// Enlisted answers up to limit of the jobs waiting in lane, oldest
// enlisted first (jobs enlisted in the same millisecond in no promised
// order), from the enlisted index, paged until limit. The index is
// eventually consistent: a job enlisted a moment ago may be missing, and
// one collected a moment ago may still be there (its collect is then
// refused, the record naming its batch).
func (s *Store) Enlisted(ctx context.Context, lane string, limit int) ([]job.Enlistee, error) {
	if lane == "" || limit < 1 {
		return nil, nil // DynamoDB refuses an empty key; nothing waits there
	}
	in := &ddb.QueryInput{
		TableName: aws.String(s.table), IndexName: aws.String(s.idx.enlisted),
		KeyConditionExpression:    aws.String("#pk = :lane"),
		ExpressionAttributeNames:  map[string]string{"#pk": aEnlisted},
		ExpressionAttributeValues: map[string]types.AttributeValue{":lane": avS(lane)},
		ScanIndexForward:          aws.Bool(true),
	}
	var out []job.Enlistee
	for {
		// Never read past what is asked for.
		in.Limit = aws.Int32(int32(min(limit-len(out), math.MaxInt32)))
		page, err := s.c.Query(ctx, in)
		if err != nil {
			return nil, unavailable("query enlisted jobs", err)
		}
		for _, it := range page.Items {
			e, err := enlisteeOf(it)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if len(page.LastEvaluatedKey) == 0 || len(out) >= limit {
			return out[:min(len(out), limit)], nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// enlisteeOf reads one item of the enlisted index.
func enlisteeOf(it map[string]types.AttributeValue) (job.Enlistee, error) {
	at, err := strconv.ParseInt(attrN(it, aEnlistedAt), 10, 64)
	if err != nil || attrS(it, aID) == "" {
		return job.Enlistee{}, unreadable(fmt.Errorf("enlisted index item %q: no id or enlist time (%v)", attrS(it, aID), err))
	}
	return job.Enlistee{ID: attrS(it, aID), At: time.UnixMilli(at).UTC()}, nil
}
