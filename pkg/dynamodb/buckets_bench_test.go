package dynamodb_test

import (
	"context"
	"flag"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

var (
	benchRPS     = flag.Float64("buckets.rps", 120, "BenchmarkBucketUnderLoad: the key's limit, calls a second")
	benchOver    = flag.Float64("buckets.over", 1, "BenchmarkBucketUnderLoad: the takers' offered load as a multiple of the limit")
	benchFor     = flag.Duration("buckets.for", 10*time.Second, "BenchmarkBucketUnderLoad: how long the takers take")
	benchInPlace = flag.Bool("buckets.inplace", false, "BenchmarkBucketUnderLoad: a refused take waits its wait and takes again, as a worker waits in place, rather than being dropped")
	benchPartRPS = flag.Float64("buckets.part", 0, "BenchmarkBucketUnderLoad: the calls a second one part carries (0: the store's default), scaled down with the load")
)

// writeCounter counts the UpdateItems of each item (its provider key).
type writeCounter struct {
	*ddb.Client
	mu     sync.Mutex
	writes map[string]int
}

func (c *writeCounter) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	if k, ok := in.Key["provider"].(*types.AttributeValueMemberS); ok {
		c.mu.Lock()
		c.writes[k.Value]++
		c.mu.Unlock()
	}
	return c.Client.UpdateItem(ctx, in, o...)
}

// BenchmarkBucketUnderLoad: 64 takers (64 workers, a store each) over one
// key, each taking at a steady pace so that together they offer
// -buckets.over times the key's limit for -buckets.for; a refused take
// is dropped (the worker's deferral), or with -buckets.inplace waits its
// wait and takes again (a worker's wait in place), so that over the
// limit every taker keeps taking. It reports the grants
// a second against the limit, the UpdateItems per granted take and the
// busiest item's writes a second (docs/benchmarks.md, "Provider rate
// limits (issue I)"). Against kumo:
//
//	KUMO_BIN=/work/main/bin/kumo go test ./pkg/dynamodb -run '^$' -bench BucketUnderLoad -benchtime 1x -buckets.over 10
func BenchmarkBucketUnderLoad(b *testing.B) {
	c := &writeCounter{Client: awsclientFor(b), writes: map[string]int{}}
	table := awstest.Prefix(b) + "-buckets"
	if err := dynamodb.CreateBucketsTable(b.Context(), c.Client, table); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: &table}) })
	const takers = 64
	limit := job.RateLimit{RequestsPerMinute: int64(*benchRPS * 60), TokensPerMinute: int64(*benchRPS * 60 * 1000)}
	every := time.Duration(float64(time.Second) * takers / (*benchRPS * *benchOver))
	var granted, asked atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range takers {
		s := newBenchStore(c, table)
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := start.Add(time.Duration(i) * every / takers)
			for ; time.Since(start) < *benchFor; next = next.Add(every) {
				time.Sleep(time.Until(next))
				asked.Add(1)
				got, err := s.Take(b.Context(), job.Take{Provider: "key", Limit: limit, Now: time.Now(), Tokens: 1000})
				for ; err == nil && !got.OK && *benchInPlace && time.Since(start) < *benchFor; got, err = s.Take(b.Context(), job.Take{Provider: "key", Limit: limit, Now: time.Now(), Tokens: 1000}) {
					time.Sleep(got.Wait)
				}
				if err != nil {
					b.Error(err)
					return
				}
				if got.OK {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	total, busiest := 0, 0
	var items []string
	for k, n := range c.writes {
		total += n
		busiest = max(busiest, n)
		items = append(items, k)
	}
	sort.Strings(items)
	b.ReportMetric(float64(asked.Load())/took, "asked/s")
	b.ReportMetric(float64(granted.Load())/took, "granted/s")
	// The key's limit over the run: its rate, and the burst a full bucket
	// starts with.
	b.ReportMetric(float64(granted.Load())/(*benchRPS*(took+job.Burst.Seconds())), "of-limit")
	b.ReportMetric(float64(total)/float64(max(granted.Load(), 1)), "updates/grant")
	b.ReportMetric(float64(busiest)/took, "busiest-item-writes/s")
	b.ReportMetric(float64(len(items)), "items")
}

func awsclientFor(b *testing.B) *ddb.Client { return awsclient.DynamoDB(awstest.Config(b, nil)) }

func newBenchStore(c dynamodb.BucketClient, table string) *dynamodb.Buckets {
	s := dynamodb.NewBuckets(c, table)
	if *benchPartRPS > 0 {
		s.SplitAt(int64(*benchPartRPS * 60))
	}
	return s
}
