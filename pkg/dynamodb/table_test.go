package dynamodb_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/settings"
)

// TestCreateTable: a second and third create succeed (the dev server runs
// it at every start), and the table has the shape the store relies on.
func TestCreateTable(t *testing.T) {
	c, table := newTable(t)
	st := settings.Defaults()
	for range 2 {
		if err := dynamodb.CreateTable(t.Context(), c, table, st); err != nil {
			t.Fatalf("create again: %v", err)
		}
	}
	out, err := c.DescribeTable(t.Context(), &ddb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	if d.TableStatus != types.TableStatusActive {
		t.Errorf("status %s", d.TableStatus)
	}
	if len(d.KeySchema) != 1 || aws.ToString(d.KeySchema[0].AttributeName) != "id" || d.KeySchema[0].KeyType != types.KeyTypeHash {
		t.Errorf("key schema %+v, want hash key id", d.KeySchema)
	}
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %+v, want PAY_PER_REQUEST", d.BillingModeSummary)
	}
	if len(d.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("indexes %+v, want the failure index only", d.GlobalSecondaryIndexes)
	}
	gsi := d.GlobalSecondaryIndexes[0]
	if aws.ToString(gsi.IndexName) != st.FailureIndex || len(gsi.KeySchema) != 2 ||
		aws.ToString(gsi.KeySchema[0].AttributeName) != "fail_pk" || aws.ToString(gsi.KeySchema[1].AttributeName) != "fail_sk" {
		t.Errorf("index %s keyed by %+v, want %s on fail_pk, fail_sk", aws.ToString(gsi.IndexName), gsi.KeySchema, st.FailureIndex)
	}
	want := []string{"attempts", "cost_nc", "error_class", "input_hash", "model", "state", "tenant", "updated_ms"}
	got := slices.Sorted(slices.Values(gsi.Projection.NonKeyAttributes))
	if gsi.Projection.ProjectionType != types.ProjectionTypeInclude || !slices.Equal(got, want) {
		t.Errorf("projection %s %v, want INCLUDE %v", gsi.Projection.ProjectionType, got, want)
	}
	ttl, err := c.DescribeTimeToLive(t.Context(), &ddb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "expires_at" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("ttl %+v, want ENABLED on expires_at", d)
	}
}
