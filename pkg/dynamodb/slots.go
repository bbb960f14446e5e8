package dynamodb

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// A tenant's in-flight slots (job.Slot) live in the buckets table beside
// the providers' buckets, one item per tenant keyed "tenant#<tenant>" (a
// provider's name has no '#'), as a string set of entries. A set, not a
// map: ADD creates it with its first entry, and DELETE of an entry that is
// gone is no error, so entering and leaving need no first write and no
// read. An entry says when it ends; a full set is cleared of ended entries
// and tried once more. The same item holds a second set, of its queued
// jobs (AIJOBS_TENANT_QUEUED), kept the same way.
const (
	bSlots  = "slots"
	bQueued = "queued"
)

// Slots are one kind of the tenants' slots in the buckets table: in
// flight or queued.
type Slots struct {
	c     BucketClient
	table string
	set   string
}

// NewSlots returns the in-flight slots store over the buckets table.
func NewSlots(c BucketClient, table string) *Slots { return &Slots{c: c, table: table, set: bSlots} }

// NewQueueSlots returns the queued slots store over the buckets table: a
// job's place among its tenant's queued jobs, from its create until its
// first call starts.
func NewQueueSlots(c BucketClient, table string) *Slots {
	return &Slots{c: c, table: table, set: bQueued}
}

func slotKey(tenant string) map[string]types.AttributeValue { return bucketKey("tenant#" + tenant) }

// Enter takes sl when its tenant has fewer than sl.Limit slots (one
// conditional UpdateItem; on a full set, one more to clear what has
// ended, and the take again).
func (s *Slots) Enter(ctx context.Context, sl job.Slot) (bool, error) {
	for try := range 2 {
		_, err := s.c.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: slotKey(sl.Tenant),
			ConditionExpression: aws.String("attribute_not_exists(#s) OR size(#s) < :limit"), UpdateExpression: aws.String("ADD #s :e"),
			ExpressionAttributeNames: map[string]string{"#s": s.set},
			ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberSS{Value: []string{sl.Entry()}},
				":limit": avN(int64(sl.Limit))},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return true, nil
		case !errors.As(err, &ccf):
			return false, unavailable("enter a tenant slot", err)
		case try > 0:
			return false, nil
		}
		cleared, err := s.clear(ctx, sl, ccf.Item)
		if err != nil || !cleared {
			return false, err
		}
	}
	return false, nil
}

// clear deletes the ended entries of sl's tenant's set as it (the
// refused take's item, or a read) shows it, and reports whether any were.
func (s *Slots) clear(ctx context.Context, sl job.Slot, it map[string]types.AttributeValue) (bool, error) {
	if len(it) == 0 {
		out, err := s.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: slotKey(sl.Tenant), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return false, unavailable("read tenant slots", err)
		}
		it = out.Item
	}
	set, _ := it[s.set].(*types.AttributeValueMemberSS)
	var ended []string
	if set != nil {
		for _, e := range set.Value {
			if job.SlotEnded(e, sl.Now) {
				ended = append(ended, e)
			}
		}
	}
	if len(ended) == 0 {
		return false, nil
	}
	return true, s.remove(ctx, sl.Tenant, ended)
}

// Leave gives sl back.
func (s *Slots) Leave(ctx context.Context, sl job.Slot) error {
	return s.remove(ctx, sl.Tenant, []string{sl.Entry()})
}

func (s *Slots) remove(ctx context.Context, tenant string, entries []string) error {
	_, err := s.c.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: slotKey(tenant),
		UpdateExpression: aws.String("DELETE #s :e"), ExpressionAttributeNames: map[string]string{"#s": s.set},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberSS{Value: entries}}})
	if err != nil {
		return unavailable("leave a tenant slot", err)
	}
	return nil
}
