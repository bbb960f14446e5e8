package dynamodb_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// slotCost is what one Enter and its Leave cost at a limit, the tenant
// held near it, as the quota front meters them (DynamoDB's billing: an
// UpdateItem at the larger of its item before and after, whole KB).
type slotCost struct {
	limit, held         int
	writes, reads       float64 // per Enter+Leave pair, averaged
	writesBare          float64 // the same with a Leave that does not say its limit (the worker's queued leave)
	readsBare           float64
	refused, tried      int // enters refused at the fill held, of those tried
	largest, itemsAfter int // the largest item of the table, and how many there are
}

// measureSlots fills a tenant of limit to percent of it straight on the
// emulator, then meters pairs Enter+Leave through the front.
func measureSlots(t *testing.T, limit, percent, pairs int) slotCost {
	t.Helper()
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	f, err := quota.Start(awstest.Endpoint(t), quota.AWS())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	cfg := awstest.Config(t, nil)
	cfg.BaseEndpoint = aws.String(f.Endpoint)
	via := dynamodb.NewSlots(awsclient.DynamoDB(cfg), table)
	bare := dynamodb.NewSlots(c, table)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	slot := func(i int) job.Slot {
		return job.Slot{Tenant: "jwt:tenant-a", JobID: fmt.Sprintf("job_%026d", i), Now: now, Until: now.Add(time.Hour), Limit: limit}
	}
	out := slotCost{limit: limit}
	for i := 0; out.held < limit*percent/100 && i < 2*limit; i++ {
		ok, err := bare.Enter(ctx, slot(i))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out.held++
		}
	}
	// pair meters an Enter and its Leave, bare: one that does not say
	// its limit. An Enter refused (near the limit, every shard it tried
	// full) is counted, and its writes with the pair's: the next job tries.
	pair := func(i int, bare bool) (float64, float64) {
		f.Meter.Reset()
		for ; ; i += 10_000 {
			sl := slot(i)
			out.tried++
			ok, err := via.Enter(ctx, sl)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				out.refused++
				continue
			}
			if bare {
				sl.Limit, sl.Now = 0, time.Time{}
			}
			if err := via.Leave(ctx, sl); err != nil {
				t.Fatal(err)
			}
			break
		}
		u := f.Meter.Usage(quota.Scope{Table: table})
		return u.Write / float64(pairs), u.Read / float64(pairs)
	}
	for i := range pairs {
		w, r := pair(1_000_000+i, false)
		out.writes, out.reads = out.writes+w, out.reads+r
		w, r = pair(2_000_000+i, true)
		out.writesBare, out.readsBare = out.writesBare+w, out.readsBare+r
	}
	scan, err := c.Scan(ctx, &ddb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range scan.Items {
		out.largest = max(out.largest, dynamodb.ItemSize(it))
	}
	out.itemsAfter = len(scan.Items)
	return out
}

// TestSlotCostsStaySmallAtAnyLimit: at limits of 10, 1,000 and 5,000,
// the tenant at half and at 90% of its limit, no item passes 1 KB, so
// every write is one write unit whatever the limit, and an Enter and its
// Leave cost at most a write a shard tried (docs/fairness.md, "How slots
// scale"). The log lines are the measurement the doc quotes:
//
//	KUMO_BIN=/work/main/bin/kumo go test -p 1 -count=1 -run SlotCosts -v ./pkg/dynamodb
//
// Reads: kumo returns no item with a refusal, so a refused try reads it
// (one read unit) where DynamoDB would not; a Leave that does not say
// its limit reads the shards it may be in.
// slotsMost bounds the limits TestSlotCostsStaySmallAtAnyLimit fills:
// make test-moto measures up to 1,000, where moto spends minutes filling
// 5,000 slots for counts kumo already gives.
var slotsMost = flag.Int("slots.most", 5000, "TestSlotCostsStaySmallAtAnyLimit: the largest limit filled (10, 1000 or 5000)")

func TestSlotCostsStaySmallAtAnyLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a tenant of 5,000 slots")
	}
	for _, limit := range []int{10, 1000, 5000} {
		if limit > *slotsMost {
			continue
		}
		for _, percent := range []int{50, 90} {
			t.Run(fmt.Sprintf("%d at %d%%", limit, percent), func(t *testing.T) {
				const pairs, shardsTried = 10, 4 // pairs of each Leave; an Enter tries at most 4 shards
				m := measureSlots(t, limit, percent, pairs)
				t.Logf("limit %d, %d held: an Enter+Leave costs %.1f write units, %.1f read units; with a Leave that does not say its limit %.1f and %.1f; %d of %d enters refused; largest item %d bytes, %d items",
					m.limit, m.held, m.writes, m.reads, m.writesBare, m.readsBare, m.refused, m.tried, m.largest, m.itemsAfter)
				if m.held < limit*percent/100 {
					t.Errorf("filled %d of %d", m.held, limit)
				}
				if m.largest > 1024 {
					t.Errorf("the largest item is %d bytes: over one write unit", m.largest)
				}
				// A Leave with its limit walks the Enter's shards again, a
				// bare one deletes once: a write unit each.
				if spent, most := (m.writes+m.writesBare)*pairs, float64(shardsTried*(m.tried+pairs)+pairs); spent > most {
					t.Errorf("%d Enters and %d Leaves cost %.0f write units, over one a shard tried (%.0f)", m.tried, 2*pairs, spent, most)
				}
			})
		}
	}
}

// TestATenantsSlotWritesSpreadOverItsShards: 200 jobs entering and
// leaving a tenant of 1,000 write to its 64 shards, none taking more than
// a tenth of the writes (one key took them all when a tenant was one
// item), so no one key's 1,000 write units a second caps the tenant.
func TestATenantsSlotWritesSpreadOverItsShards(t *testing.T) {
	_, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	f, err := quota.Start(awstest.Endpoint(t), quota.AWS())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	cfg := awstest.Config(t, nil)
	cfg.BaseEndpoint = aws.String(f.Endpoint)
	s := dynamodb.NewSlots(awsclient.DynamoDB(cfg), table)
	now := time.Now()
	for i := range 200 {
		sl := job.Slot{Tenant: "jwt:tenant-a", JobID: fmt.Sprintf("job_%d", i), Now: now, Until: now.Add(time.Hour), Limit: 1000}
		if ok, err := s.Enter(t.Context(), sl); err != nil || !ok {
			t.Fatalf("enter %d: %v %v", i, ok, err)
		}
		if err := s.Leave(t.Context(), sl); err != nil {
			t.Fatal(err)
		}
	}
	var total float64
	var hottest quota.Usage
	keys := 0
	for _, u := range f.Meter.All() {
		if u.Table != table || u.Key == "" || u.Index != "" {
			continue
		}
		keys++
		total += u.Write
		if u.Write > hottest.Write {
			hottest = u
		}
	}
	t.Logf("%.0f write units over %d keys, the hottest %s with %.0f", total, keys, hottest.Key, hottest.Write)
	if total < 400 || hottest.Write > total/10 {
		t.Fatalf("%.0f write units, %.0f on the hottest key %s: want 400 or more, at most a tenth on one key", total, hottest.Write, hottest.Key)
	}
}
