package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"
)

// Attribute names of the item layout (pkg/dynamodb) that the table's
// schema depends on; a test keeps failureProjection in step with it.
const (
	attrID      = "id"
	attrFailPK  = "fail_pk"
	attrFailSK  = "fail_sk"
	attrExpires = "expires_at"
)

// failureProjection is what the failure index carries besides its keys:
// enough to answer "what did this cost and which inputs caused it" in one
// query, without fetching the (large) input or result.
var failureProjection = []string{"tenant", "state", "error_class", "input_hash", "cost_nc", "attempts", "model", "updated_ms"}

// newTable is the jobs table: one item per job. The record is the product
// (DESIGN 2), so it is protected twice (deletion protection and RETAIN)
// and recoverable to the second (point-in-time recovery) unless the stack
// is a throwaway.
func newTable(stack awscdk.Stack, cfg Config) awsdynamodb.Table {
	s := cfg.Settings
	table := awsdynamodb.NewTable(stack, jsii.String("Jobs"), &awsdynamodb.TableProps{
		TableName:    jsii.String(s.TableName()),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(attrID), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(attrExpires),
		DeletionProtection:  jsii.Bool(!cfg.Throwaway),
		RemovalPolicy:       removalPolicy(cfg),
	})
	// Sparse: only failed and abandoned items carry fail_pk, and the key is
	// "<error_class>#<shard>" so one hot class spreads over FailureShards
	// partitions.
	table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:        jsii.String(s.FailureIndex),
		PartitionKey:     &awsdynamodb.Attribute{Name: jsii.String(attrFailPK), Type: awsdynamodb.AttributeType_STRING},
		SortKey:          &awsdynamodb.Attribute{Name: jsii.String(attrFailSK), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
		NonKeyAttributes: jsii.Strings(failureProjection...),
	})
	return table
}

// removalPolicy keeps data on stack deletion unless the stack is a throwaway.
func removalPolicy(cfg Config) awscdk.RemovalPolicy {
	if cfg.Throwaway {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}
