package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/settings"
)

// TableAPI is what creating the table needs.
type TableAPI interface {
	CreateTable(context.Context, *ddb.CreateTableInput, ...func(*ddb.Options)) (*ddb.CreateTableOutput, error)
	DescribeTable(context.Context, *ddb.DescribeTableInput, ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
	UpdateTimeToLive(context.Context, *ddb.UpdateTimeToLiveInput, ...func(*ddb.Options)) (*ddb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(context.Context, *ddb.DescribeTimeToLiveInput, ...func(*ddb.Options)) (*ddb.DescribeTimeToLiveOutput, error)
}

// activePolls bounds the wait for a new table: activePolls x activePoll.
const (
	activePolls = 600
	activePoll  = 100 * time.Millisecond
)

// CreateTable makes the jobs table as the CDK stack does (on demand, the
// sparse failure index, the write-sharded tenant, active and created
// indexes, the sparse enlisted index of the batch lanes, TTL on
// expires_at, a stream of new and old images for the notifier), for local
// stacks. It is idempotent and returns once the table is ACTIVE. A table
// that already exists keeps its shape: one created before the stream was
// added has none, and pkg/dynamodbstreams.Find says so; one created before
// by_tenant_shard lists no jobs until it is created afresh.
func CreateTable(ctx context.Context, c TableAPI, table string, st settings.Settings) error {
	_, err := c.CreateTable(ctx, &ddb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(aID), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aFailPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aFailSK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aTenantPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aTenantSK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aCreated), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(aActivePK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aCreatedPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aEnlisted), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aEnlistedAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(aID), KeyType: types.KeyTypeHash}},
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName: aws.String(st.FailureIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(aFailPK), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(aFailSK), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: FailureProjection},
			},
			{
				IndexName: aws.String(st.TenantIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(aTenantPK), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(aTenantSK), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: TenantProjection},
			},
			{
				IndexName: aws.String(st.ActiveIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(aActivePK), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(aCreated), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
			{
				IndexName: aws.String(st.CreatedIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(aCreatedPK), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(aCreated), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: CreatedProjection},
			},
			{
				IndexName: aws.String(st.EnlistedIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(aEnlisted), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(aEnlistedAt), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := waitActive(ctx, c, table); err != nil {
		return err
	}
	return enableTTL(ctx, c, table)
}

// create makes the table as the CDK stack does (on demand, l's keys and
// TTL), for local stacks; idempotent, it returns once the table is ACTIVE.
func (l layout) create(ctx context.Context, c TableAPI, table string) error {
	in := &ddb.CreateTableInput{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest}
	for _, k := range []struct {
		attr string
		kind types.KeyType
	}{{l.hash, types.KeyTypeHash}, {l.sort, types.KeyTypeRange}} {
		if k.attr == "" {
			continue
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(k.attr), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.attr), KeyType: k.kind})
	}
	_, err := c.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := waitActive(ctx, c, table); err != nil {
		return err
	}
	if l.ttl {
		return enableTTL(ctx, c, table)
	}
	return nil
}

// waitActive polls until the table (and so the index created with it) is
// ACTIVE, or ctx ends.
func waitActive(ctx context.Context, c TableAPI, table string) error {
	for range activePolls {
		out, err := c.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", table, err)
		}
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s: %w", table, ctx.Err())
		case <-time.After(activePoll):
		}
	}
	return fmt.Errorf("table %s not active after %s", table, activePolls*activePoll)
}

// enableTTL turns TTL on for expires_at unless it already is: DynamoDB
// refuses a second enable ("TimeToLive is already enabled"), and an enable
// that is still ENABLING counts as done.
func enableTTL(ctx context.Context, c TableAPI, table string) error {
	out, err := c.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("describe ttl of %s: %w", table, err)
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == aExpires &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = c.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(aExpires), Enabled: aws.Bool(true)},
	})
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "already enabled") {
		return fmt.Errorf("enable ttl on %s: %w", table, err)
	}
	return nil
}
