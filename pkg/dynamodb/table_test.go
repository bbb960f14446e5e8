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
// it at every start), and the table has the shape the store relies on,
// with the stream the notifier reads.
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
	if s := d.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != types.StreamViewTypeNewAndOldImages ||
		aws.ToString(d.LatestStreamArn) == "" {
		t.Errorf("stream %+v, arn %q: want NEW_AND_OLD_IMAGES, enabled", s, aws.ToString(d.LatestStreamArn))
	}
	// Each index by name: its keys, projection type and projected attributes.
	type index struct {
		keys       []string
		projection types.ProjectionType
		attrs      []string
	}
	want := map[string]index{
		st.FailureIndex: {[]string{"fail_pk", "fail_sk"}, types.ProjectionTypeInclude,
			[]string{"attempts", "cost_nc", "error_class", "input_hash", "model", "state", "tenant", "updated_ms"}},
		st.TenantIndex: {[]string{"tnt_pk", "tnt_sk"}, types.ProjectionTypeInclude,
			[]string{"attempts", "budget_nc", "cost_nc", "created_ms", "deadline_ms", "error_class", "input_hash", "max_attempts", "model",
				"replays", "request_key", "result_model", "state", "tenant"}},
		st.ActiveIndex: {[]string{"act_pk", "created_ms"}, types.ProjectionTypeKeysOnly, nil},
		st.CreatedIndex: {[]string{"crt_pk", "created_ms"}, types.ProjectionTypeInclude,
			[]string{"attempts", "budget_nc", "cost_nc", "deadline_ms", "error_class", "input_hash", "max_attempts", "model",
				"replays", "request_key", "result_model", "run_ms", "state", "tenant"}},
		st.EnlistedIndex: {[]string{"enl_pk", "enl_ms"}, types.ProjectionTypeKeysOnly, nil},
	}
	if len(d.GlobalSecondaryIndexes) != len(want) {
		t.Fatalf("%d indexes, want %d", len(d.GlobalSecondaryIndexes), len(want))
	}
	for _, gsi := range d.GlobalSecondaryIndexes {
		w, ok := want[aws.ToString(gsi.IndexName)]
		var keys []string
		for _, k := range gsi.KeySchema {
			keys = append(keys, aws.ToString(k.AttributeName))
		}
		attrs := slices.Sorted(slices.Values(gsi.Projection.NonKeyAttributes))
		if !ok || !slices.Equal(keys, w.keys) || gsi.Projection.ProjectionType != w.projection || !slices.Equal(attrs, w.attrs) {
			t.Errorf("index %s: keys %v, projection %s %v; want %+v", aws.ToString(gsi.IndexName), keys, gsi.Projection.ProjectionType, attrs, w)
		}
	}
	ttl, err := c.DescribeTimeToLive(t.Context(), &ddb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "expires_at" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("ttl %+v, want ENABLED on expires_at", d)
	}
}
