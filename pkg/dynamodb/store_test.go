package dynamodb_test

import (
	"context"
	"encoding/json"
	"os"
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

func newTable(t *testing.T) (*ddb.Client, string) {
	c := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t)
	if err := dynamodb.CreateTable(context.Background(), c, table, settings.Defaults()); err != nil {
		t.Fatal(err)
	}
	return c, table
}

// TestConformance runs the store suite against DynamoDB (kumo, or the
// endpoint in AWS_ENDPOINT_URL), a fresh table per case.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		c, table := newTable(t)
		return dynamodb.New(c, table, 4)
	})
}

func TestCreateTableIsIdempotent(t *testing.T) {
	c, table := newTable(t)
	if err := dynamodb.CreateTable(context.Background(), c, table, settings.Defaults()); err != nil {
		t.Fatalf("second create: %v", err)
	}
}

// TestFailureIndexHoldsEndedJobsOnly: the sparse index answers "what did
// this cost and which inputs caused it" for failed and abandoned jobs, and
// holds nothing else.
func TestFailureIndexHoldsEndedJobsOnly(t *testing.T) {
	ctx := context.Background()
	c, table := newTable(t)
	st := dynamodb.New(c, table, 1)
	now := job.Millis(time.Now())
	mk := func(key string) job.Job {
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, InputHash: "sha256:" + key, Model: "default",
			Input: json.RawMessage(`{}`), State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: now.Add(time.Hour),
			Version: 1, CreatedAt: now, UpdatedAt: now}
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	failed, running := mk("failed"), mk("running")
	if _, err := st.Claim(ctx, job.Claim{ID: failed.ID, Owner: "w", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.End(ctx, job.End{ID: failed.ID, Owner: "w", Now: now.Add(2 * time.Second), Cost: 42, Class: job.ContentFiltered}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: running.ID, Owner: "w", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for class, want := range map[job.ErrorClass]int{job.ContentFiltered: 1, job.RateLimited: 0} {
		out, err := c.Query(ctx, &ddb.QueryInput{
			TableName: aws.String(table), IndexName: aws.String(settings.Defaults().FailureIndex),
			KeyConditionExpression:    aws.String("fail_pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: string(class) + "#0"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) != want {
			t.Fatalf("%s: %d items, want %d", class, len(out.Items), want)
		}
		if want == 1 {
			it := out.Items[0]
			if it["input_hash"].(*types.AttributeValueMemberS).Value != "sha256:failed" || it["cost_nc"].(*types.AttributeValueMemberN).Value != "42" {
				t.Fatalf("index item lacks hash or cost: %v", it)
			}
		}
	}
}
