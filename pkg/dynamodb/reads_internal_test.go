package dynamodb

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

var readsJobs = flag.Int("reads.jobs", 3000, "jobs seeded over 30 days for TestOperatorReadsFollowWhatTheyShow (docs/benchmarks.md used 100000)")

// meter is the store's client, counting calls and the read units
// DynamoDB would charge for them: kumo reports no consumed capacity, so
// they are computed from what was read, by the rules of "DynamoDB read
// and write operations" in the DynamoDB developer guide
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
// a Query's items read are summed and rounded up to 4 KB per call; a
// GetItem's item rounded up to 4 KB; an eventually consistent read (every
// index Query, and the reads the store makes so) half a unit per 4 KB.
// A filtered Query reads the items its key condition selects, not the
// ones it returns: it is counted as that many index entries of the
// created index (entry bytes each, the seeded entries' mean). kumo
// answers an index Query with the whole item whatever the index
// projects, so a Query that does not name its attributes (the failure
// and tenant indexes') is counted on whole items: an upper bound.
type meter struct {
	Client
	mu    sync.Mutex
	calls map[string]int
	units float64
	entry int // bytes of one index entry, for a filtered query's unreturned items
}

func (m *meter) Query(ctx context.Context, in *ddb.QueryInput, opts ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	out, err := m.Client.Query(ctx, in, opts...)
	if err == nil {
		read := sizes(out.Items)
		if in.FilterExpression != nil {
			read = int(out.ScannedCount) * m.entry
		}
		m.add("Query", read, true)
	}
	return out, err
}

func (m *meter) GetItem(ctx context.Context, in *ddb.GetItemInput, opts ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	full := *in
	full.ProjectionExpression, full.ExpressionAttributeNames = nil, nil // units are counted on the whole item
	whole, err := m.Client.GetItem(ctx, &full, opts...)
	if err != nil {
		return nil, err
	}
	m.add("GetItem", itemSize(whole.Item), !aws.ToBool(in.ConsistentRead))
	return m.Client.GetItem(ctx, in, opts...)
}

func (m *meter) add(op string, bytes int, eventual bool) {
	units := math.Ceil(float64(max(bytes, 1)) / 4096)
	if eventual {
		units /= 2
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[op]++
	m.units += units
}

// read runs f and answers the calls and read units it took.
func (m *meter) read(f func() error) (map[string]int, float64, error) {
	m.mu.Lock()
	m.calls, m.units = map[string]int{}, 0
	m.mu.Unlock()
	err := f()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.units, err
}

func sizes(items []map[string]types.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += itemSize(it)
	}
	return n
}

// TestOperatorReadsFollowWhatTheyShow seeds -reads.jobs jobs created
// evenly over 30 days (7% failed, 2% abandoned, the last hour's 1% queued
// and five stuck since the month began, the rest succeeded) and measures
// what each operator read costs: the console's overview (Recent over its
// 48 h window and the last day's failures), the failures page, a tenant's
// jobs page, a job's page and advise --from-table's sample of 1,000. Each
// must read in proportion to what it shows: the overview's read units stay
// within a constant factor of the window's share of the table, where the
// Scan it replaced read the whole table (its figures are computed from the
// table's size, as DynamoDB charges a Scan: every item read, 1 MB a call).
//
//	go test ./pkg/dynamodb -run TestOperatorReadsFollowWhatTheyShow -reads.jobs 100000 -v
func TestOperatorReadsFollowWhatTheyShow(t *testing.T) {
	c := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t)
	st := settings.Defaults()
	if err := CreateTable(t.Context(), c, table, st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	now := time.Now().UTC().Truncate(time.Millisecond)
	seeded := seedMonth(t, c, table, now, *readsJobs)
	total, inWindow := seeded.bytes, seeded.inWindow
	m := &meter{Client: c, entry: seeded.entry}
	s := New(m, table, st)
	ctx := t.Context()

	var shown int
	pages := []struct {
		name string
		read func() error
	}{
		{"overview (and the tenant-less jobs page)", func() error {
			shown = 0
			if err := s.Recent(ctx, job.RecentQuery{Since: now.Add(-48 * time.Hour), Now: now}, func(job.Job) error { shown++; return nil }); err != nil {
				return err
			}
			return s.Failures(ctx, job.FailureQuery{Since: now.Add(-24 * time.Hour), Until: now}, func(job.Failure) error { return nil })
		}},
		{"failures, last 24 h", func() error {
			return s.Failures(ctx, job.FailureQuery{Since: now.Add(-24 * time.Hour), Until: now}, func(job.Failure) error { return nil })
		}},
		{"a tenant's jobs, one page", func() error { _, err := s.List(ctx, job.ListQuery{Tenant: "tenant-7", Limit: 50}); return err }},
		{"a job", func() error { _, err := s.Get(ctx, job.NewID("tenant-7", "k-7")); return err }},
		{"advise --from-table, sample 1000", func() error {
			return s.Finished(ctx, job.FinishedQuery{Model: "default", Limit: 1000, Since: now.AddDate(0, 0, -31), Now: now}, func(job.Job) error { return nil })
		}},
	}
	scanCalls, scanUnits := math.Ceil(float64(total)/(1<<20)), math.Ceil(float64(total)/4096)/2
	t.Logf("%d jobs over 30 days, %d bytes (%.1f KB a job, %d B a created index entry); %d created in the last 48 h or unfinished",
		*readsJobs, total, float64(total)/float64(*readsJobs)/1024, seeded.entry, inWindow)
	t.Logf("before: the overview's Scan read the whole table: %.0f calls, %.0f read units", scanCalls, scanUnits)
	// advise's Scan read in table order until it had its sample: on
	// average the sample's share of the matching jobs, of the table.
	share := min(1, 1000/float64(max(seeded.sample, 1)))
	t.Logf("before: advise's Scan for a sample of 1000 (%d jobs match): %.0f calls, %.0f read units", seeded.sample,
		math.Ceil(share*float64(total)/(1<<20)), math.Ceil(share*float64(total)/4096)/2)
	for _, p := range pages {
		calls, units, err := m.read(p.read)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		t.Logf("after: %-42s %v, %.1f read units", p.name, calls, units)
		if strings.HasPrefix(p.name, "overview") {
			if shown != inWindow {
				t.Errorf("the overview showed %d jobs, want the %d created in its window or unfinished", shown, inWindow)
			}
			// No more than the window's share of what the Scan read,
			// give or take the rounding of each call's half unit.
			n := 0
			for _, k := range calls {
				n += k
			}
			if bound := float64(inWindow)/float64(*readsJobs)*scanUnits + float64(n)/2; units > bound {
				t.Errorf("the overview read %.1f units in %d calls, more than its window's share of the table (%.1f)", units, n, bound)
			}
		}
	}
}

// seedMonth writes n jobs created evenly over the 30 days before now
// straight into the table (BatchWriteItem, the item layout of toItem, the
// failure index's keys as End writes them), and answers the table's size
// in bytes, how many jobs the overview's 48 h window holds, and how many
// advise's sample query matches.
func seedMonth(t *testing.T, c *ddb.Client, table string, now time.Time, n int) (seeded struct{ bytes, inWindow, sample, entry int }) {
	t.Helper()
	idx := New(nil, "", settings.Defaults()).idx
	input, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("Summarise the ticket. ", 40)}}})
	var items []map[string]types.AttributeValue
	for i := range n {
		created := now.Add(-time.Duration(float64(30*24*time.Hour) * float64(i) / float64(n))).Truncate(time.Millisecond)
		tenant, key := fmt.Sprintf("tenant-%d", i%50), fmt.Sprintf("k-%d", i)
		j := job.Job{ID: job.NewID(tenant, key), Tenant: tenant, RequestKey: key, InputHash: fmt.Sprintf("sha256:%064d", i%900),
			Model: []string{"default", "cheap", "long"}[i%3], Input: input, State: job.Succeeded, Attempts: 1, MaxAttempts: 3,
			Budget: job.Cents(50), Cost: job.Cents(2), RunTime: time.Duration(1+i%20) * time.Second, Deadline: created.Add(time.Hour),
			Version: 4, CreatedAt: created, UpdatedAt: created.Add(20 * time.Second), ExpiresAt: created.AddDate(0, 0, 31)}
		switch p := i % 100; {
		case p < 7:
			j.State, j.ErrorClass, j.Result = job.Failed, []job.ErrorClass{job.Overloaded, job.Timeout, job.ContextLengthExceeded}[i%3], nil
		case p < 9:
			j.State, j.ErrorClass = job.Abandoned, job.Cancelled
		case p < 10 && created.After(now.Add(-time.Hour)), i >= n-5:
			// Unfinished: the last hour's, and five stuck since the
			// month began (older than any window: read one by one).
			j.State, j.Attempts, j.Cost, j.ExpiresAt = job.Queued, 0, 0, time.Time{}
		default:
			j.Result, j.ResultModel = json.RawMessage(`{"output":"`+strings.Repeat("The ticket asks for a refund. ", 30)+`"}`), "fake/m"
		}
		it := toItem(j, idx)
		if j.State == job.Failed || j.State == job.Abandoned {
			it[aFailPK], it[aFailSK] = failKeyValues(j, j.UpdatedAt)
		}
		seeded.bytes += itemSize(it)
		entry := 0
		for _, a := range append([]string{aID, aCreated, aCreatedPK}, CreatedProjection...) {
			if v, ok := it[a]; ok {
				entry += len(a) + valueSize(v)
			}
		}
		seeded.entry += entry
		if !created.Before(now.Add(-48*time.Hour)) || !j.State.Terminal() {
			seeded.inWindow++
		}
		if (job.FinishedQuery{Model: "default"}).Includes(j) {
			seeded.sample++
		}
		items = append(items, it)
	}
	batchWrite(t, c, table, items)
	seeded.entry /= max(n, 1)
	return seeded
}

func failKeyValues(j job.Job, ended time.Time) (types.AttributeValue, types.AttributeValue) {
	pk, sk := failureKeys(j.ID, j.ErrorClass, ended, settings.Defaults().FailureShards)
	return avS(pk), avS(sk)
}

// batchWrite puts items 25 a call (BatchWriteItem's limit), 8 calls at
// once, retrying what comes back unprocessed.
func batchWrite(t *testing.T, c *ddb.Client, table string, items []map[string]types.AttributeValue) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 8)
	for start := 0; start < len(items); start += 25 {
		reqs := make([]types.WriteRequest, 0, 25)
		for _, it := range items[start:min(start+25, len(items))] {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for pending := map[string][]types.WriteRequest{table: reqs}; len(pending[table]) > 0; {
				out, err := c.BatchWriteItem(context.Background(), &ddb.BatchWriteItemInput{RequestItems: pending})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				pending = out.UnprocessedItems
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("seed: %v", err)
	default:
	}
}

// TestAReadByCreationDayNeedsABoundedStart: one Query per day and shard,
// so a zero Since (a walk back to year 1) or a year-long window is refused
// before any call (the store has no client here: a call would panic).
func TestAReadByCreationDayNeedsABoundedStart(t *testing.T) {
	s := New(nil, "t", settings.Defaults())
	now := time.Now()
	for name, err := range map[string]error{
		"recent from zero":       s.Recent(t.Context(), job.RecentQuery{Now: now}, func(job.Job) error { return nil }),
		"finished from zero":     s.Finished(t.Context(), job.FinishedQuery{Model: "m", Limit: 1, Now: now}, func(job.Job) error { return nil }),
		"finished over 500 days": s.Finished(t.Context(), job.FinishedQuery{Model: "m", Limit: 1, Since: now.AddDate(0, 0, -500), Now: now}, func(job.Job) error { return nil }),
	} {
		if job.ErrorCode(err) != job.CodeInvalidRequest {
			t.Errorf("%s: %v, want invalid_request", name, err)
		}
	}
}
