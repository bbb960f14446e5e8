package dynamodb_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// tenantCost is what one tenant's jobs cost the tenant index, metered by
// the quota front as DynamoDB would bill them.
type tenantCost struct {
	indexUnits    float64 // write units on the tenant index, per job
	keys          int     // the partition keys written
	pageUnits     float64 // read units of a page, on average
	fullPageUnits float64 // the same of a page of job.MaxListLimit
	pages, shards int
}

// busiest is the write units a second the busiest of c's keys takes at
// rate jobs a second: a key's jobs in a second are binomial (rate, 1 /
// shards), taken at three standard deviations over the mean. Computed
// from the units a job measured, not driven at that rate: 200 jobs are
// too few to show the spread of 2,000 a second.
func (c tenantCost) busiest(rate float64) float64 {
	p := 1 / float64(c.shards)
	return (rate*p + 3*math.Sqrt(rate*p*(1-p))) * c.indexUnits
}

// TestATenantsWritesSpreadAndWhatAPageReads measures, through the quota
// front, a tenant's jobs (created, claimed, succeeded: three writes to
// the tenant index each) with the tenant index on one key, as before it
// was sharded, and on TenantShards: the write units a job takes on the
// index and the keys they spread over, so the rate the busiest key would
// carry at 2,000 jobs/s of the one tenant (tenantCost.busiest), and the
// read units of a page of 20 (and of 100) followed to the end. The
// sharded index must keep that key under a partition's 1,000 writes a
// second, where one key could not, and a page must cost at most a query
// per shard of at most 9 index entries.
//
//	go test ./pkg/dynamodb -run TestATenantsWritesSpreadAndWhatAPageReads -v
//
// tenantsJobs is how many jobs TestATenantsWritesSpreadAndWhatAPageReads
// runs through each layout: enough that every shard is written (make
// test-moto runs 160, as moto takes minutes over 400).
var tenantsJobs = flag.Int("tenants.jobs", 400, "TestATenantsWritesSpreadAndWhatAPageReads: jobs run through each layout of the tenant index")

func TestATenantsWritesSpreadAndWhatAPageReads(t *testing.T) {
	const limit, rate = 20, 2000
	jobs := *tenantsJobs
	shards := settings.Defaults().TenantShards
	before, after := tenantCosts(t, 1, jobs, limit), tenantCosts(t, shards, jobs, limit)
	for _, c := range []tenantCost{before, after} {
		t.Logf("%d shard(s): %.2f tenant index write units a job over %d keys; the busiest key at %d jobs/s: %.0f a second; a page of %d: %.1f read units (%d pages), of %d: %.1f",
			c.shards, c.indexUnits, c.keys, rate, c.busiest(rate), limit, c.pageUnits, c.pages, job.MaxListLimit, c.fullPageUnits)
	}
	if before.busiest(rate) <= 1000 {
		t.Errorf("one key takes %.0f write units a second at %d jobs/s: the measure does not show the wall", before.busiest(rate), rate)
	}
	if after.keys != shards || after.busiest(rate) > 1000 {
		t.Errorf("%d of %d shards written, the busiest taking %.0f write units a second at %d jobs/s (a partition takes 1,000)",
			after.keys, shards, after.busiest(rate), rate)
	}
	// An entry is under 400 bytes, and a query reads 2 x 3 + 2 of them (a
	// page of 20 over 8 shards), one more with since: 9 are at most one
	// block of 4 KB, half a unit for an eventually consistent Query.
	if bound := float64(shards) * math.Ceil(float64(2*3+2+1)*400/4096) / 2; after.pageUnits > bound {
		t.Errorf("a page read %.1f units, more than a query of 9 entries per shard (%.1f)", after.pageUnits, bound)
	}
}

// tenantCosts runs jobs through a table whose tenant index has shards
// keys, behind a quota front, and pages through them limit at a time.
func tenantCosts(t *testing.T, shards, jobs, limit int) tenantCost {
	t.Helper()
	ctx := t.Context()
	f, err := quota.Start(awstest.Endpoint(t), quota.AWS())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	cfg := awstest.Config(t, nil)
	cfg.BaseEndpoint = aws.String(f.Endpoint)
	c := awsclient.DynamoDB(cfg)
	table := fmt.Sprintf("%s-%d", awstest.Prefix(t), shards)
	st := settings.Defaults()
	st.TenantShards = shards
	if err := dynamodb.CreateTable(ctx, c, table, st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	s := dynamodb.New(c, table, st)
	f.Meter.Reset()
	for i := range jobs {
		j := queuedJob(fmt.Sprint("cost-", i))
		j.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		now := j.CreatedAt.Add(time.Second)
		_, err1 := s.Create(ctx, j)
		_, err2 := s.Claim(ctx, job.Claim{ID: j.ID, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute)})
		_, err3 := s.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "w", Now: now.Add(time.Second), ExpiresAt: keep})
		if err := firstError(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
	}
	cost := tenantCost{shards: shards}
	for _, u := range f.Meter.All() {
		if u.Table == table && u.Index == st.TenantIndex && u.Key != "" && u.Write > 0 {
			cost.indexUnits += u.Write / float64(jobs)
			cost.keys++
		}
	}
	var units float64
	cost.pages, units = pageThrough(t, s, f.Meter, quota.Scope{Table: table, Index: st.TenantIndex}, limit)
	cost.pageUnits = units / float64(cost.pages)
	pages, units := pageThrough(t, s, f.Meter, quota.Scope{Table: table, Index: st.TenantIndex}, job.MaxListLimit)
	cost.fullPageUnits = units / float64(pages)
	return cost
}

// pageThrough follows the tenant's pages of limit to the end, and answers
// how many there were and the read units they took on scope.
func pageThrough(t *testing.T, s *dynamodb.Store, m *quota.Meter, scope quota.Scope, limit int) (int, float64) {
	t.Helper()
	m.Reset()
	q := job.ListQuery{Tenant: "t", Limit: limit}
	for pages := 1; ; pages++ {
		p, err := s.List(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if q.Cursor = p.Next; q.Cursor == "" {
			return pages, m.Usage(scope).Read
		}
	}
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
