package dynamodb

import (
	"context"

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
	t   side
	set string
}

// NewSlots returns the in-flight slots store over the buckets table.
func NewSlots(c BucketClient, table string) *Slots { return newSlots(c, table, bSlots) }

// NewQueueSlots returns the queued slots store over the buckets table: a
// job's place among its tenant's queued jobs, from its create until its
// first call starts.
func NewQueueSlots(c BucketClient, table string) *Slots { return newSlots(c, table, bQueued) }

func newSlots(c BucketClient, table, set string) *Slots {
	return &Slots{t: side{layout: bucketsLayout, table: table, get: c, update: c}, set: set}
}

func (s *Slots) key(tenant string) map[string]types.AttributeValue {
	return s.t.key("tenant#" + tenant)
}

// Enter takes sl when its tenant has fewer than sl.Limit slots (one
// conditional UpdateItem; on a full set, one more to clear what has
// ended, and the take again).
func (s *Slots) Enter(ctx context.Context, sl job.Slot) (bool, error) {
	for try := range 2 {
		e := newExpr()
		n := e.name(s.set)
		e.when("attribute_not_exists(" + n + ") OR size(" + n + ") < " + e.value("limit", avN(int64(sl.Limit))))
		e.add = append(e.add, n+" "+e.value("e", stringSet(sl.Entry())))
		o, err := s.t.change(ctx, "enter a tenant slot", s.key(sl.Tenant), e)
		switch {
		case err != nil:
			return false, err
		case !o.refused:
			return true, nil
		case try > 0:
			return false, nil
		}
		cleared, err := s.clear(ctx, sl, o.item)
		if err != nil || !cleared {
			return false, err
		}
	}
	return false, nil
}

// clear deletes the ended entries of sl's tenant's set as it (the
// refused take's item, or a read) shows it, and reports whether any were.
func (s *Slots) clear(ctx context.Context, sl job.Slot, it map[string]types.AttributeValue) (bool, error) {
	it, err := s.t.standing(ctx, "read tenant slots", s.key(sl.Tenant), it)
	if err != nil {
		return false, err
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
	e := newExpr()
	e.del = append(e.del, e.name(s.set)+" "+e.value("e", stringSet(entries...)))
	_, err := s.t.change(ctx, "leave a tenant slot", s.key(tenant), e)
	return err
}
