package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The tenants table holds what aijobs keeps per tenant rather than per
// job: today, which versions of its webhook signing key are in use
// (job.WebhookKeys). One item per tenant, keyed by the tenant; a tenant
// with no item has never rotated.
const (
	tTenant    = "tenant"
	tKeyVer    = "key_version"
	tPrevVer   = "previous_key_version"
	tRotatedMS = "key_rotated_ms"
)

// TenantsClient is the part of the DynamoDB API the tenants store calls.
type TenantsClient interface {
	GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
}

// Tenants is the tenants table.
type Tenants struct {
	c     TenantsClient
	table string
}

// NewTenants returns the store over the tenants table.
func NewTenants(c TenantsClient, table string) *Tenants { return &Tenants{c: c, table: table} }

// WebhookKeys reads tenant's key versions with a strongly consistent read,
// so a rotation is seen at once by the next delivery and the next read of
// the key.
func (t *Tenants) WebhookKeys(ctx context.Context, tenant string) (job.WebhookKeys, error) {
	out, err := t.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(t.table),
		Key: map[string]types.AttributeValue{tTenant: avS(tenant)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return job.WebhookKeys{}, unavailable("get tenant", err)
	}
	if len(out.Item) == 0 {
		return job.FirstWebhookKeys(tenant), nil
	}
	return webhookKeysOf(tenant, out.Item)
}

// RotateWebhookKeys rotates tenant's key away from version from
// (job.WebhookKeys.RotateFrom): read, then one write conditioned on the
// version read, so concurrent or retried rotations from one version make
// one new version. (One SET with
// if_not_exists on both sides would save the read, but kumo answers the
// previous version wrongly there; docs/architecture.md, "Known gaps".)
func (t *Tenants) RotateWebhookKeys(ctx context.Context, tenant string, from int, now time.Time) (job.WebhookKeys, error) {
	for range rotateTries {
		cur, err := t.WebhookKeys(ctx, tenant)
		if err != nil {
			return job.WebhookKeys{}, err
		}
		next, rotate, err := cur.RotateFrom(from, now)
		if err != nil || !rotate {
			return next, err
		}
		cond, v := "#ver = :cur", map[string]types.AttributeValue{":cur": avN(int64(cur.Current))}
		if cur.Previous == 0 && cur.Current == 1 {
			cond = "attribute_not_exists(#ver) OR #ver = :cur"
		}
		v[":next"], v[":prev"], v[":now"] = avN(int64(next.Current)), avN(int64(next.Previous)), avN(next.RotatedAt.UnixMilli())
		_, err = t.c.UpdateItem(ctx, &ddb.UpdateItemInput{
			TableName:                 aws.String(t.table),
			Key:                       map[string]types.AttributeValue{tTenant: avS(tenant)},
			ConditionExpression:       aws.String(cond),
			UpdateExpression:          aws.String("SET #ver = :next, #prev = :prev, #rot = :now"),
			ExpressionAttributeNames:  map[string]string{"#prev": tPrevVer, "#ver": tKeyVer, "#rot": tRotatedMS},
			ExpressionAttributeValues: v,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return next, nil
		case !errors.As(err, &ccf):
			return job.WebhookKeys{}, unavailable("rotate webhook key", err)
		}
	}
	return job.WebhookKeys{}, unavailable("rotate webhook key", fmt.Errorf("tenant %s: rotated by others %d times", tenant, rotateTries))
}

// rotateTries bounds the re-reads of a rotation that others keep racing.
const rotateTries = 8

func webhookKeysOf(tenant string, it map[string]types.AttributeValue) (job.WebhookKeys, error) {
	d := &decoder{it: it}
	k := job.WebhookKeys{Tenant: tenant, Current: int(d.num(tKeyVer)), Previous: int(d.num(tPrevVer)), RotatedAt: d.t(tRotatedMS)}
	if d.err != nil {
		return job.WebhookKeys{}, unreadable(d.err)
	}
	k.Current = max(k.Current, 1)
	return k, nil
}

// CreateTenantsTable makes the tenants table as the CDK stack does (on
// demand, keyed by tenant), for local stacks; idempotent, it returns once
// the table is ACTIVE.
func CreateTenantsTable(ctx context.Context, c TableAPI, table string) error {
	_, err := c.CreateTable(ctx, &ddb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(tTenant), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(tTenant), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	return waitActive(ctx, c, table)
}
