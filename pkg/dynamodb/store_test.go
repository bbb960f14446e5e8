package dynamodb_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/storetest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// newTable creates a table of its own for t (so tests run in parallel) and
// deletes it afterwards, which matters against a long-lived endpoint.
func newTable(t *testing.T) (*ddb.Client, string) {
	t.Helper()
	c := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t)
	if err := dynamodb.CreateTable(t.Context(), c, table, settings.Defaults()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	return c, table
}

// TestConformance runs the store suite against DynamoDB (kumo, or the
// endpoint in AWS_ENDPOINT_URL), a fresh table per case.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		c, table := newTable(t)
		return dynamodb.New(c, table, settings.Defaults())
	})
}

// TestQuarantineConformance runs the quarantine suite against the
// quarantine table on DynamoDB (kumo, or AWS_ENDPOINT_URL).
func TestQuarantineConformance(t *testing.T) {
	c, table := sideTable(t, "quarantine", dynamodb.CreateQuarantineTable)
	storetest.RunQuarantines(t, dynamodb.NewQuarantines(c, table))
}

// TestBucketConformance runs the bucket suite against the buckets table
// on DynamoDB (kumo, or AWS_ENDPOINT_URL).
func TestBucketConformance(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	storetest.RunBuckets(t, dynamodb.NewBuckets(c, table))
}

// TestSlotConformance runs the slot suite against the buckets table on
// DynamoDB (kumo, or AWS_ENDPOINT_URL).
func TestSlotConformance(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	storetest.RunSlots(t, dynamodb.NewSlots(c, table))
}

// TestSpendConformance runs the spend balances' suite against the
// buckets table on DynamoDB (kumo, or AWS_ENDPOINT_URL): the hold's
// condition is the store's, so racing holds stay within every part's
// share.
func TestSpendConformance(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	storetest.RunSpend(t, dynamodb.NewSpend(c, table))
}

// TestQueueSlotConformance runs the slot suite against the queued slots,
// and shows a tenant's two kinds of slots, on one item, counted apart.
func TestQueueSlotConformance(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	storetest.RunSlots(t, dynamodb.NewQueueSlots(c, table))

	now := time.Now()
	sl := job.Slot{Tenant: "tenant-apart", JobID: "job_1", Now: now, Until: now.Add(time.Minute), Limit: 1}
	for _, s := range []*dynamodb.Slots{dynamodb.NewSlots(c, table), dynamodb.NewQueueSlots(c, table)} {
		if ok, err := s.Enter(t.Context(), sl); err != nil || !ok {
			t.Fatalf("a job's slot in flight and its queued slot are counted together: %v, %v", ok, err)
		}
	}
	if ok, _ := dynamodb.NewQueueSlots(c, table).Enter(t.Context(), job.Slot{Tenant: sl.Tenant, JobID: "job_2", Now: now, Until: sl.Until, Limit: 1}); ok {
		t.Fatal("a second queued job entered past a limit of 1")
	}
}

// TestBatchConformance runs the batch records suite against the buckets
// table on DynamoDB (kumo, or AWS_ENDPOINT_URL), beside a provider's
// bucket and a tenant's slots whose keys look most like a batch's: none
// of the three sees the others.
func TestBatchConformance(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	now := time.Now()
	buckets, slots := dynamodb.NewBuckets(c, table), dynamodb.NewSlots(c, table)
	for _, name := range []string{"batch", "batches", "b1"} {
		if got, err := buckets.Take(t.Context(), job.Take{Provider: name, Limit: job.RateLimit{RequestsPerMinute: 60}, Now: now}); err != nil || !got.OK {
			t.Fatalf("take from bucket %s: %+v %v", name, got, err)
		}
		if ok, err := slots.Enter(t.Context(), job.Slot{Tenant: name, JobID: "job_1", Now: now, Until: now.Add(time.Hour), Limit: 1}); err != nil || !ok {
			t.Fatalf("enter a slot of tenant %s: %v %v", name, ok, err)
		}
	}
	storetest.RunBatches(t, dynamodb.NewBatches(c, table))
	for _, name := range []string{"batch", "batches", "b1"} {
		if b, err := buckets.Bucket(t.Context(), name); err != nil || b.Requests.IsZero() {
			t.Errorf("bucket %s after the batches: %+v %v", name, b, err)
		}
		if ok, err := slots.Enter(t.Context(), job.Slot{Tenant: name, JobID: "job_2", Now: now, Until: now.Add(time.Hour), Limit: 1}); err != nil || ok {
			t.Errorf("tenant %s's slot was lost to the batches: entered %v, %v", name, ok, err)
		}
	}
}

// TestASettledBatchLeavesTheOpenList: the save that settles a batch takes
// it off the open list itself, so the list stays as short as what is
// open, not only once a read passes the settled batch over.
func TestASettledBatchLeavesTheOpenList(t *testing.T) {
	ctx := t.Context()
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	bs := dynamodb.NewBatches(c, table)
	open := func() []string {
		out, err := c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"provider": &types.AttributeValueMemberS{Value: "batches#open"}}})
		if err != nil {
			t.Fatal(err)
		}
		ss, _ := out.Item["open"].(*types.AttributeValueMemberSS)
		if ss == nil {
			return nil
		}
		return slices.Sorted(slices.Values(ss.Value))
	}
	for _, id := range []string{"b1", "b2"} {
		if err := bs.OpenBatch(ctx, job.BatchRecord{ID: id, State: job.Collecting, CreatedAt: base, UpdatedAt: base}); err != nil {
			t.Fatal(err)
		}
	}
	if got := open(); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("open list %v, want [b1 b2]", got)
	}
	if err := bs.SaveBatch(ctx, job.BatchRecord{ID: "b1", State: job.Settled, CreatedAt: base, UpdatedAt: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := open(); !slices.Equal(got, []string{"b2"}) {
		t.Fatalf("open list after b1 settled %v, want [b2]", got)
	}
}

// sideTable is a fresh table beside the jobs table, made by create as the
// dev server makes it and deleted after the test.
func sideTable(t *testing.T, suffix string, create func(context.Context, dynamodb.TableAPI, string) error) (*ddb.Client, string) {
	t.Helper()
	c := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t) + "-" + suffix
	if err := create(t.Context(), c, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	return c, table
}
