package dynamodb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
