package dynamodb_test

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// TestFailureIndexHoldsEndedJobsOnly: the sparse index answers "what did
// this cost and which inputs caused it" for failed and abandoned jobs, by
// class over its shards, and holds nothing else.
func TestFailureIndexHoldsEndedJobsOnly(t *testing.T) {
	ctx := t.Context()
	c, table := newTable(t)
	s := settings.Defaults()
	st := dynamodb.New(c, table, s)
	now := base.Add(time.Second)
	mk := func(key string) job.Job {
		j := queuedJob(key)
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "w-" + key, Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	failed, cancelled, running, succeeded := mk("failed"), mk("cancelled"), mk("running"), mk("succeeded")
	if _, err := st.End(ctx, job.End{ID: failed.ID, Owner: "w-failed", Now: now.Add(time.Second), Settlement: job.Settlement{Cost: 42}, Class: job.ContentFiltered, ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Cancel(ctx, job.Cancel{ID: cancelled.ID, Tenant: "t", Now: now.Add(time.Second), ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Succeed(ctx, job.Succeed{ID: succeeded.ID, Owner: "w-succeeded", Now: now.Add(time.Second), Settlement: job.Settlement{Cost: 1}, ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}

	byClass := func(class job.ErrorClass) []map[string]types.AttributeValue {
		var items []map[string]types.AttributeValue
		for shard := range s.FailureShards {
			out, err := c.Query(ctx, &ddb.QueryInput{
				TableName: aws.String(table), IndexName: aws.String(s.FailureIndex),
				KeyConditionExpression: aws.String("fail_pk = :pk AND fail_sk > :from"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk":   &types.AttributeValueMemberS{Value: string(class) + "#" + strconv.Itoa(shard)},
					":from": &types.AttributeValueMemberS{Value: "0"},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, out.Items...)
		}
		return items
	}
	str := func(it map[string]types.AttributeValue, k string) string {
		switch v := it[k].(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return ""
	}
	for _, c := range []struct {
		class     job.ErrorClass
		id, state string
		cost      string
	}{
		{job.ContentFiltered, failed.ID, "failed", "42"},
		{job.Cancelled, cancelled.ID, "abandoned", "0"},
	} {
		items := byClass(c.class)
		if len(items) != 1 {
			t.Fatalf("%s: %d items in the index, want 1", c.class, len(items))
		}
		it := items[0]
		got := map[string]string{}
		for _, k := range []string{"id", "tenant", "state", "error_class", "input_hash", "cost_nc", "attempts", "model"} {
			got[k] = str(it, k)
		}
		want := map[string]string{"id": c.id, "tenant": "t", "state": c.state, "error_class": string(c.class),
			"input_hash": str(it, "input_hash"), "cost_nc": c.cost, "attempts": "1", "model": "default"}
		if got["input_hash"] == "" || !maps.Equal(got, want) || str(it, "updated_ms") == "" {
			t.Errorf("%s: index item %v, want %v and updated_ms", c.class, got, want)
		}
	}
	// Nothing else is in the index: not the running job, not the success.
	var ids []string
	for _, class := range job.Classes() {
		for _, it := range byClass(class) {
			ids = append(ids, str(it, "id"))
		}
	}
	slices.Sort(ids)
	want := []string{failed.ID, cancelled.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("index holds %v, want only %v (not running %s, succeeded %s)", ids, want, running.ID, succeeded.ID)
	}
}
