package main

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"
)

// Attribute names of the item layout (pkg/dynamodb) that the table's
// schema depends on. They are copies, not imports: pkg/dynamodb keeps its
// names unexported and drags the DynamoDB SDK into the CDK app, so a test
// (TestIndexesMatchStore) creates the table through pkg/dynamodb's own
// CreateTable against a recorder and compares every index with this one.
const (
	attrID        = "id"
	attrTenant    = "tenant"
	attrCreated   = "created_ms"
	attrTenantPK  = "tnt_pk"
	attrTenantSK  = "tnt_sk"
	attrFailPK    = "fail_pk"
	attrFailSK    = "fail_sk"
	attrActivePK  = "act_pk"
	attrCreatedPK = "crt_pk"
	// attrEnlistedPK and attrEnlistedAt are the enlisted index's keys: a
	// batch lane's name and when the job was enlisted in it.
	attrEnlistedPK = "enl_pk"
	attrEnlistedAt = "enl_ms"
	attrExpires    = "expires_at"
	// attrProvider is the buckets table's key: the provider key a bucket
	// limits, or a tenant's item or a batch record's (pkg/dynamodb; named
	// for the first, and a key's name cannot change on a deployed table).
	attrProvider = "provider"
)

// failureProjection is what the failure index carries besides its keys:
// enough to answer "what did this cost and which inputs caused it" in one
// query, without fetching the (large) input or result.
var failureProjection = []string{"tenant", "state", "error_class", "input_hash", "cost_nc", "attempts", "model", "updated_ms"}

// summaryAttributes are a job's summary as GET /jobs lists it: only
// attributes that change with the state, so a heartbeat never writes to
// an index that carries them.
var summaryAttributes = []string{"state", "request_key", "input_hash", "model", "attempts", "max_attempts", "cost_nc", "budget_nc",
	"error_class", "result_model", "deadline_ms", "replays"}

// tenantProjection is what the tenant index carries besides its keys: the
// summary, the tenant and the creation time, which its sharded keys no
// longer are (pkg/dynamodb.TenantProjection, held equal by a test).
var tenantProjection = append(slices.Clone(summaryAttributes), attrTenant, attrCreated)

// createdProjection is what the created index carries besides its keys:
// the summary, the tenant and the run time, none of which a heartbeat
// writes (pkg/dynamodb.CreatedProjection, held equal by a test).
var createdProjection = append(slices.Clone(summaryAttributes), attrTenant, "run_ms")

// skippableIndexes are the indexes a deployment may leave out for one
// deploy (context skipIndexes): DynamoDB creates one global secondary
// index per table update, so a table deployed before them gets them one
// deploy at a time (docs/deploy.md).
func skippableIndexes(cfg Config) []string {
	return []string{cfg.Settings.TenantIndex, cfg.Settings.ActiveIndex, cfg.Settings.CreatedIndex, cfg.Settings.EnlistedIndex}
}

// newTable is the jobs table: one item per job. The record is the product
// (docs/architecture.md, "The job record"), so it is protected twice (deletion
// protection and RETAIN) and recoverable to the second (point-in-time recovery)
// unless the stack is a throwaway.
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
		// Every write, before and after: the notifier turns the writes that
		// moved a job with a callback into a wanted state into notices
		// (docs/webhooks.md), as pkg/dynamodb.CreateTable's stream does locally.
		Stream:             awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		DeletionProtection: jsii.Bool(!cfg.Throwaway),
		RemovalPolicy:      removalPolicy(cfg),
	})
	str, num := awsdynamodb.AttributeType_STRING, awsdynamodb.AttributeType_NUMBER
	indexes := []indexSpec{
		// Sparse: only failed and abandoned items carry fail_pk, and the key
		// is "<error_class>#<shard>" so one hot class spreads over
		// FailureShards partitions.
		{Name: s.FailureIndex, Partition: attrFailPK, PartitionType: str, Sort: attrFailSK, SortType: str, Include: failureProjection},
		// One tenant's jobs, newest first (GET /jobs), over TenantShards
		// keys ("<tenant>#<shard>") so that one tenant's writes are not
		// one partition's; sorted by "<13-digit created ms>#<id>", unique,
		// so a list merges the shards from one position. A new name (it
		// was by_tenant, keyed by the tenant): an index's keys cannot
		// change in place (docs/deploy.md).
		{Name: s.TenantIndex, Partition: attrTenantPK, PartitionType: str, Sort: attrTenantSK, SortType: str, Include: tenantProjection},
		// Sparse: only queued and running items carry act_pk
		// ("active#<shard>", ActiveShards of them), the reconciler's
		// worklist; it reads the ids and then the items.
		{Name: s.ActiveIndex, Partition: attrActivePK, PartitionType: str, Sort: attrCreated, SortType: num},
		// Every job by the UTC day it was created ("<yyyy-mm-dd>#<shard>",
		// CreatedShards of them a day):
		// the console's overview and advise --from-table read the days
		// they show, not the table.
		{Name: s.CreatedIndex, Partition: attrCreatedPK, PartitionType: str, Sort: attrCreated, SortType: num, Include: createdProjection},
		// Sparse: only jobs waiting in a batch lane to be collected carry
		// enl_pk (the lane, "<route>#<rung>"), oldest enlisted first: a
		// collector reads the ids of what waits, and then the items.
		{Name: s.EnlistedIndex, Partition: attrEnlistedPK, PartitionType: str, Sort: attrEnlistedAt, SortType: num},
	}
	for _, ix := range indexes {
		// LoadConfig lets only skippableIndexes in: the failure index is
		// always there.
		if slices.Contains(cfg.SkipIndexes, ix.Name) {
			continue
		}
		addIndex(table, ix)
	}
	return table
}

// indexSpec is one global secondary index of the jobs table: its name,
// its keys, and the attributes it carries besides them. The five indexes
// differ only in these, so addIndex builds all of them the same way.
type indexSpec struct {
	Name                    string
	Partition, Sort         string
	PartitionType, SortType awsdynamodb.AttributeType
	// Include is what the index projects besides its keys; none makes it
	// a keys-only index.
	Include []string
}

// addIndex adds the index ix to table.
func addIndex(table awsdynamodb.Table, ix indexSpec) {
	props := &awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(ix.Name),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(ix.Partition), Type: ix.PartitionType},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(ix.Sort), Type: ix.SortType},
		ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY,
	}
	if len(ix.Include) > 0 {
		props.ProjectionType = awsdynamodb.ProjectionType_INCLUDE
		props.NonKeyAttributes = jsii.Strings(ix.Include...)
	}
	table.AddGlobalSecondaryIndex(props)
}

// indexArn is the ARN of one of the table's indexes: a grant on it allows
// a Query of that index and of nothing else.
func indexArn(table awsdynamodb.Table, index string) *string {
	return jsii.String(*table.TableArn() + "/index/" + index)
}

// removalPolicy keeps data on stack deletion unless the stack is a throwaway.
func removalPolicy(cfg Config) awscdk.RemovalPolicy {
	if cfg.Throwaway {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}

// newTenantsTable is the tenants table: one item per tenant that rotated
// its webhook signing key, holding which key versions sign and verify
// (docs/webhooks.md, "Your signing key"). The keys themselves are derived
// from the signing secret and never stored. A lost item would put a
// tenant back on key version 1, which its receivers no longer trust after
// a rotation, so the table is kept like the jobs table: deletion
// protection, RETAIN and point-in-time recovery unless the stack is a
// throwaway. Its key must match pkg/dynamodb.CreateTenantsTable's
// (TestTenantsTableMatchesStore).
func newTenantsTable(stack awscdk.Stack, cfg Config) awsdynamodb.Table {
	return awsdynamodb.NewTable(stack, jsii.String("Tenants"), &awsdynamodb.TableProps{
		TableName:    jsii.String(cfg.Settings.TenantsTableName()),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(attrTenant), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(!cfg.Throwaway),
		RemovalPolicy:      removalPolicy(cfg),
	})
}

// newQuarantineTable is the quarantine table (pkg/dynamodb's quarantine
// layout): the inputs known to fail, by tenant and "<route>#<input hash>",
// expired by TTL. Kept like the other tables, though losing it costs no
// record: a quarantined input would fail once more and be quarantined
// again.
func newQuarantineTable(stack awscdk.Stack, cfg Config) awsdynamodb.Table {
	return awsdynamodb.NewTable(stack, jsii.String("Quarantine"), &awsdynamodb.TableProps{
		TableName:    jsii.String(cfg.Settings.QuarantineTableName()),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(attrTenant), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String("key"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(attrExpires),
		DeletionProtection:  jsii.Bool(!cfg.Throwaway),
		RemovalPolicy:       removalPolicy(cfg),
	})
}

// newBucketsTable is the buckets table (<prefix>-buckets, pkg/config's
// AIJOBS_BUCKETS_TABLE default; the name, the construct id and the key's
// name are its first use's, kept so that a deploy does not replace it):
// what the functions share besides the jobs. One item per provider key,
// the shared rate-limit state every worker takes from before a model call
// (docs/ratelimits.md, "Provider rate limits"; the GCRA times
// req_tat_us and tok_tat_us, numbers, which need no declaration); a
// tenant's slot shards, "tenant#<kind>#<shard>#<tenant>", its jobs in
// flight and queued (docs/fairness.md, "How slots scale"); one per batch of the batch lane, "batch#<id>", and the list
// of open ones ("The batch lane"); a tenant's spend balance parts,
// "tenant#spend#<period>#<part>#<tenant>", which expire with their
// period (docs/spend.md). Keyed by that string alone: no sort key, no
// index; TTL on expires_at, which only the spend parts carry. Kept like the quarantine table, though losing it
// costs little: a lost bucket reads as a full one (at worst one burst
// over the limit), lost slots as free ones.
func newBucketsTable(stack awscdk.Stack, cfg Config) awsdynamodb.Table {
	return awsdynamodb.NewTable(stack, jsii.String("Buckets"), &awsdynamodb.TableProps{
		TableName:    jsii.String(cfg.Settings.BucketsTableName()),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(attrProvider), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(attrExpires),
		DeletionProtection:  jsii.Bool(!cfg.Throwaway),
		RemovalPolicy:       removalPolicy(cfg),
	})
}
