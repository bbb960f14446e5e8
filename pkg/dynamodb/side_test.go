package dynamodb_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// oldOnRefusal answers a refused conditional write as DynamoDB does when
// the write asks for ALL_OLD: with the item as it stood. kumo and moto
// return none, so without it the emulators only ever test the side
// tables' read after a refusal. It counts the stores' own reads.
type oldOnRefusal struct {
	*ddb.Client
	reads atomic.Int32
}

func (c *oldOnRefusal) GetItem(ctx context.Context, in *ddb.GetItemInput, o ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	c.reads.Add(1)
	return c.Client.GetItem(ctx, in, o...)
}

func (c *oldOnRefusal) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	out, err := c.Client.UpdateItem(ctx, in, o...)
	return out, c.old(ctx, err, in.TableName, in.Key, in.ReturnValuesOnConditionCheckFailure)
}

func (c *oldOnRefusal) PutItem(ctx context.Context, in *ddb.PutItemInput, o ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	out, err := c.Client.PutItem(ctx, in, o...)
	return out, c.old(ctx, err, in.TableName, map[string]types.AttributeValue{"provider": in.Item["provider"]}, in.ReturnValuesOnConditionCheckFailure)
}

// old puts the item as it stands into err when err is a refusal of a
// write that asked for it.
func (c *oldOnRefusal) old(ctx context.Context, err error, table *string, key map[string]types.AttributeValue, asked types.ReturnValuesOnConditionCheckFailure) error {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || asked != types.ReturnValuesOnConditionCheckFailureAllOld {
		return err
	}
	out, gerr := c.Client.GetItem(ctx, &ddb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		return gerr
	}
	ccf.Item = out.Item
	return err
}

// TestSideTablesDecideFromTheItemARefusalReturns: where DynamoDB returns
// the item with a refused write, the buckets, slots and batch records
// decide from it and read nothing: a take guessed at no limit is made
// again at the limit learned meanwhile, a full set is cleared of its
// ended entry, an open of an existing batch is a conflict.
func TestSideTablesDecideFromTheItemARefusalReturns(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	now := time.Now().UTC().Truncate(time.Millisecond)
	ctx := t.Context()
	seeded := dynamodb.NewBuckets(c, table)
	if got, err := seeded.Take(ctx, job.Take{Provider: "openai", Now: now}); err != nil || !got.OK {
		t.Fatalf("a take knowing no limit: %+v %v", got, err)
	}
	c2 := &oldOnRefusal{Client: c}
	b := dynamodb.NewBuckets(c2, table)
	if got, err := b.Take(ctx, job.Take{Provider: "openai", Now: now}); err != nil || !got.OK {
		t.Fatalf("a second take knowing no limit: %+v %v", got, err)
	}
	if err := seeded.Learn(ctx, job.Learn{Provider: "openai", Limit: job.RateLimit{RequestsPerMinute: 120}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{0, 0, 500 * time.Millisecond} {
		got, err := b.Take(ctx, job.Take{Provider: "openai", Now: now})
		if err != nil || got.OK != (want == 0) || got.Wait != want {
			t.Fatalf("take %d after a limit was learned: %+v %v, want a wait of %s", i, got, err, want)
		}
	}

	s := dynamodb.NewSlots(c2, table)
	if ok, err := s.Enter(ctx, job.Slot{Tenant: "t", JobID: "job_1", Now: now, Until: now.Add(time.Second), Limit: 1}); err != nil || !ok {
		t.Fatalf("the first slot: %v %v", ok, err)
	}
	later := now.Add(2 * time.Second)
	if ok, err := s.Enter(ctx, job.Slot{Tenant: "t", JobID: "job_2", Now: later, Until: later.Add(time.Second), Limit: 1}); err != nil || !ok {
		t.Fatalf("a slot beside one that has ended: %v %v", ok, err)
	}

	bs := dynamodb.NewBatches(c2, table)
	r := job.BatchRecord{ID: "b1", State: job.Collecting, CreatedAt: base, UpdatedAt: base}
	if err := bs.OpenBatch(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := bs.OpenBatch(ctx, r); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("a second open of b1: %v, want conflict", err)
	}
	if n := c2.reads.Load(); n != 0 {
		t.Fatalf("the stores read %d times after refusals that returned the item", n)
	}
}

// throttled refuses every call as DynamoDB does past a table's capacity
// (after the SDK's own retries).
type throttled struct{}

func (throttled) GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("throttled")}
}

func (throttled) UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("throttled")}
}

// TestAThrottledSideTableIsUnavailable: a side table's throttled call
// leaves its store as the job package's unavailable, which callers retry,
// never as an AWS error, and never as a refusal it would decide from.
func TestAThrottledSideTableIsUnavailable(t *testing.T) {
	c := throttled{}
	now := time.Now()
	_, err := dynamodb.NewBuckets(c, "buckets").Take(t.Context(), job.Take{Provider: "openai", Now: now})
	if job.ErrorCode(err) != job.CodeUnavailable {
		t.Errorf("a throttled take: %v, want unavailable", err)
	}
	if _, err := dynamodb.NewSlots(c, "buckets").Enter(t.Context(), job.Slot{Tenant: "t", JobID: "j", Now: now, Until: now.Add(time.Minute), Limit: 1}); job.ErrorCode(err) != job.CodeUnavailable {
		t.Errorf("a throttled slot: %v, want unavailable", err)
	}
	if _, err := dynamodb.NewTenants(c, "tenants").RotateWebhookKeys(t.Context(), "t", 1, now); job.ErrorCode(err) != job.CodeUnavailable {
		t.Errorf("a throttled rotation: %v, want unavailable", err)
	}
}
