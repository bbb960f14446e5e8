package dynamodb

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// A tenant's slots (job.Slot) live in the buckets table beside the
// providers' buckets, its limit divided over shards: items keyed
// "tenant#<kind>#<shard>#<tenant>" (kind "slots" in flight, "queued"
// for AIJOBS_TENANT_QUEUED; the tenant last, so no tenant's name can
// make another's key; a provider's name has no '#'), each a string set
// of entries under the kind's name (docs/fairness.md, "How slots
// scale"). A set, not a map: ADD creates it with its first entry, and
// DELETE of an entry that is gone is no error, so entering and leaving
// need no first write and no read. An entry says when it ends; a full
// shard is cleared of ended entries and tried once more.
//
// One shard holds at most shardEntries entries, so every write is one
// write unit whatever the limit, and a tenant's writes spread over its
// shards' keys. The price is exactness near the limit: an Enter tries
// at most probes shards, so it may be refused while a place is free in
// a shard it did not try; it never lets more than the limit in.
const (
	bSlots  = "slots"
	bQueued = "queued"
	// shardEntries keeps a shard under 1 KB: 20 entries of 44 bytes
	// (a 30-byte job id, '@' and 13 digits) and a key of up to ~100.
	shardEntries = 20
	// shardGrowth is the step between shard counts: a power of 4 keeps
	// the shard counts a Leave that does not say its limit must search
	// to five (1 to maxShards).
	shardGrowth = 4
	// maxShards divides the largest limit configuration allows
	// (AIJOBS_TENANT_QUEUED's 5,000) into shards of shardEntries; a
	// larger limit shares as many, each holding more.
	maxShards = 256
	// probes is how many shards an Enter tries, and a Leave that says
	// its limit: all of them up to 4 shards (a limit of 80), so a small
	// limit is exact.
	probes = 4
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

func (s *Slots) key(tenant string, shard int) map[string]types.AttributeValue {
	return s.t.key("tenant#" + s.set + "#" + strconv.Itoa(shard) + "#" + tenant)
}

// shards is how many shards limit is divided over: the fewest, a power
// of shardGrowth, that hold it at shardEntries each (maxShards at most).
func shards(limit int) int {
	n := 1
	for n < maxShards && limit > n*shardEntries {
		n *= shardGrowth
	}
	return n
}

// capacity is shard i's part of limit divided over n shards: the parts
// add up to the limit exactly, which is what keeps the tenant to it.
func capacity(limit, n, i int) int {
	c := limit / n
	if i < limit%n {
		c++
	}
	return c
}

// order is the shards of n that sl tries, in turn: distinct shards (an
// odd step walks every shard of a power of two), seeded by the slot's
// tenant, job and end, so a Leave finds the shard its Enter took without
// a read, and an attempt's next try (a new end) walks other shards.
func order(sl job.Slot, n int) []int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(sl.Tenant + "\x00" + sl.Entry()))
	x := h.Sum64()
	// FNV's low bits follow its last bytes, and slots differ in a few
	// digits: a finaliser (MurmurHash3's) spreads them over every bit.
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	start, step := x%uint64(n), (x>>32)%uint64(max(n/2, 1))*2+1
	out := make([]int, 0, min(probes, n))
	for k := range uint64(min(probes, n)) {
		out = append(out, int((start+k*step)%uint64(n)))
	}
	return out
}

// Enter takes sl when a shard it tries has fewer entries than its part
// of sl.Limit: one conditional UpdateItem a shard tried (on a full
// shard with ended entries, one more to clear them, and the take again).
func (s *Slots) Enter(ctx context.Context, sl job.Slot) (bool, error) {
	n := shards(sl.Limit)
	for _, i := range order(sl, n) {
		ok, err := s.enterShard(ctx, sl, i, capacity(sl.Limit, n, i))
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// enterShard takes sl in shard i while it has fewer than limit entries.
func (s *Slots) enterShard(ctx context.Context, sl job.Slot, i, limit int) (bool, error) {
	for try := range 2 {
		e := newExpr()
		n := e.name(s.set)
		e.when("attribute_not_exists(" + n + ") OR size(" + n + ") < " + e.value("limit", avN(int64(limit))))
		e.add = append(e.add, n+" "+e.value("e", stringSet(sl.Entry())))
		o, err := s.t.change(ctx, "enter a tenant slot", s.key(sl.Tenant, i), e)
		switch {
		case err != nil:
			return false, err
		case !o.refused:
			return true, nil
		case try > 0:
			return false, nil
		}
		cleared, err := s.clear(ctx, sl, i, o.item)
		if err != nil || !cleared {
			return false, err
		}
	}
	return false, nil
}

// clear deletes the ended entries of shard i of sl's tenant as it (the
// refused take's item, or a read) shows it, and reports whether any were.
func (s *Slots) clear(ctx context.Context, sl job.Slot, i int, it map[string]types.AttributeValue) (bool, error) {
	it, err := s.t.standing(ctx, "read tenant slots", s.key(sl.Tenant, i), it)
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
	return true, s.remove(ctx, sl.Tenant, i, ended)
}

// Leave gives sl back. Saying its limit, it tries the shards its Enter
// tried, in turn, each a DELETE on condition the entry is there: as many
// writes as the Enter's tries, one far from the limit. A slot whose
// limit moved to another shard count since its Enter is not found, and
// frees itself at its end. Not saying its limit (sl.Limit 0), it is
// looked for (leaveAnywhere).
func (s *Slots) Leave(ctx context.Context, sl job.Slot) error {
	if sl.Limit <= 0 {
		return s.leaveAnywhere(ctx, sl)
	}
	for _, i := range order(sl, shards(sl.Limit)) {
		e := newExpr()
		n := e.name(s.set)
		e.when("contains(" + n + ", " + e.value("entry", avS(sl.Entry())) + ")")
		e.del = append(e.del, n+" "+e.value("e", stringSet(sl.Entry())))
		o, err := s.t.change(ctx, "leave a tenant slot", s.key(sl.Tenant, i), e)
		if err != nil || !o.refused {
			return err
		}
	}
	return nil
}

// leaveAnywhere gives back a slot whose limit its Leave does not say (the
// worker's leave of a queued place, job.Slot): it reads every shard an
// Enter at any limit could have taken (at most 17, at once, eventually
// consistent: half a read unit each), and deletes the entry where it is.
// Found nowhere, it reads them again consistently, as an Enter just
// before may not show yet; found nowhere then, there was nothing to give
// back.
func (s *Slots) leaveAnywhere(ctx context.Context, sl job.Slot) error {
	for _, consistent := range []bool{false, true} {
		held, err := s.holding(ctx, sl, consistent)
		if err != nil || len(held) > 0 {
			for _, i := range held {
				err = errors.Join(err, s.remove(ctx, sl.Tenant, i, []string{sl.Entry()}))
			}
			return err
		}
	}
	return nil
}

// holding is the shards that hold sl's entry, of those any limit's
// Enter tries.
func (s *Slots) holding(ctx context.Context, sl job.Slot, consistent bool) ([]int, error) {
	var tried []int
	for n := 1; n <= maxShards; n *= shardGrowth {
		for _, i := range order(sl, n) {
			if !slices.Contains(tried, i) {
				tried = append(tried, i)
			}
		}
	}
	held, errs := make([]bool, len(tried)), make([]error, len(tried))
	var wg sync.WaitGroup
	for k, i := range tried {
		wg.Go(func() {
			it, err := s.t.read(ctx, "find a tenant slot", s.key(sl.Tenant, i), consistent)
			set, _ := it[s.set].(*types.AttributeValueMemberSS)
			held[k], errs[k] = set != nil && slices.Contains(set.Value, sl.Entry()), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []int
	for k, i := range tried {
		if held[k] {
			out = append(out, i)
		}
	}
	return out, nil
}

func (s *Slots) remove(ctx context.Context, tenant string, shard int, entries []string) error {
	e := newExpr()
	e.del = append(e.del, e.name(s.set)+" "+e.value("e", stringSet(entries...)))
	_, err := s.t.change(ctx, "leave a tenant slot", s.key(tenant, shard), e)
	return err
}
