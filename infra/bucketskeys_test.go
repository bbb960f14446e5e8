package main

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// The API's and the collector's grants on the buckets table hold each to
// its own items, as IAM decides it (policyeval_test.go): the API may
// update a tenant's item and no provider's bucket, batch record or the
// open batches' list; the collector may read, put and update its batch
// records and their list, and no tenant's item or provider's bucket.
func TestBucketsTableGrantsHoldEachRoleToItsKeys(t *testing.T) {
	s := batched(t)
	env := roleEnv(s)
	table, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", s.cfg.Settings.BucketsTableName()))
	keys := []string{"tenant#jwt:tenant-a", "batch#b-1", "batches#open", "openai", "model#openai#gpt-4o", "tenant", "batch", "batches#closed"}
	for fn, tc := range map[string]struct {
		actions []string
		allowed []string
	}{
		"api":         {[]string{"dynamodb:UpdateItem"}, []string{"tenant#jwt:tenant-a"}},
		collectorName: {[]string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, []string{"batch#b-1", "batches#open"}},
	} {
		doc := rolePolicy(t, s, fn)
		for _, action := range tc.actions {
			for _, key := range keys {
				req := request{identity: true, action: action, resource: env[table+".Arn"], context: map[string]string{"dynamodb:LeadingKeys": key}}
				if got, why := allows(t, doc, req, env); got != slices.Contains(tc.allowed, key) {
					t.Errorf("%s %s on the item %q: allowed %v (%s)", fn, action, key, got, why)
				}
			}
		}
	}
}

// The partition keys the grants' conditions name are those pkg/dynamodb
// writes: a queued slot's (the API's) is a tenant's item; the batch
// records and their list (the collector's) are the batch records'. Each
// store is driven against a recording client, and every key it reaches
// must match its function's patterns and not the other's.
func TestBucketsKeysArePkgDynamodbs(t *testing.T) {
	ctx := context.Background()
	queued, batches := &keyRecorder{}, &keyRecorder{}
	slots := dynamodb.NewQueueSlots(queued, "side")
	now := time.Now()
	sl := job.Slot{Tenant: "jwt:tenant-a", JobID: "j1", Now: now, Until: now.Add(time.Hour), Limit: 5}
	_, _ = slots.Enter(ctx, sl)
	_ = slots.Leave(ctx, sl)
	b := dynamodb.NewBatches(batches, "side")
	r := job.BatchRecord{ID: "b-1", Lane: "batch", Provider: "fake", State: job.Collecting, CreatedAt: now, UpdatedAt: now}
	_ = b.OpenBatch(ctx, r)
	r.State = job.Settled
	_ = b.SaveBatch(ctx, r)
	_, _ = b.Batches(ctx)
	for _, tc := range []struct {
		who        string
		rec        *keyRecorder
		own, other []string
	}{
		{"the API's queued slots", queued, apiBucketsKeys, collectorBucketsKeys},
		{"the collector's batch records", batches, collectorBucketsKeys, apiBucketsKeys},
	} {
		got := tc.rec.seen()
		if len(got) == 0 {
			t.Errorf("%s reached no key", tc.who)
		}
		for _, k := range got {
			if !matchesAny(tc.own, k) || matchesAny(tc.other, k) {
				t.Errorf("%s reach the key %q: its own patterns %v match it %v, the other's %v %v",
					tc.who, k, tc.own, matchesAny(tc.own, k), tc.other, matchesAny(tc.other, k))
			}
		}
	}
}

func matchesAny(patterns []string, key string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return wildcard(p, key) })
}

// keyRecorder is a DynamoDB client that answers every item call with
// nothing and records the partition key ("provider") each call names.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (k *keyRecorder) record(item map[string]types.AttributeValue) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if v, ok := item["provider"].(*types.AttributeValueMemberS); ok {
		k.keys = append(k.keys, v.Value)
	}
}

func (k *keyRecorder) seen() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.keys)
}

func (k *keyRecorder) GetItem(_ context.Context, in *ddb.GetItemInput, _ ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	k.record(in.Key)
	return &ddb.GetItemOutput{}, nil
}

func (k *keyRecorder) PutItem(_ context.Context, in *ddb.PutItemInput, _ ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	k.record(in.Item)
	return &ddb.PutItemOutput{}, nil
}

func (k *keyRecorder) UpdateItem(_ context.Context, in *ddb.UpdateItemInput, _ ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	k.record(in.Key)
	return &ddb.UpdateItemOutput{}, nil
}

// rolePolicy is the inline policy of fn's role.
func rolePolicy(t *testing.T, s *synthesized, fn string) any {
	t.Helper()
	role, _ := roleOf(t, s, fn)
	policies := s.resources("AWS::IAM::Role")[role]["Properties"].(map[string]any)["Policies"].([]any)
	if len(policies) != 1 {
		t.Fatalf("%s's role has %d inline policies, want one", fn, len(policies))
	}
	return policies[0].(map[string]any)["PolicyDocument"]
}
