package dynamodb

import (
	"context"
	"fmt"
	"time"

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
type Tenants struct{ t side }

// NewTenants returns the store over the tenants table.
func NewTenants(c TenantsClient, table string) *Tenants {
	return &Tenants{t: side{layout: tenantsLayout, table: table, get: c, update: c}}
}

// WebhookKeys reads tenant's key versions with a strongly consistent read,
// so a rotation is seen at once by the next delivery and the next read of
// the key.
func (t *Tenants) WebhookKeys(ctx context.Context, tenant string) (job.WebhookKeys, error) {
	it, err := t.t.read(ctx, "get tenant", t.t.key(tenant), true)
	if err != nil {
		return job.WebhookKeys{}, err
	}
	if len(it) == 0 {
		return job.FirstWebhookKeys(tenant), nil
	}
	return webhookKeysOf(tenant, it)
}

// RotateWebhookKeys rotates tenant's key away from version from
// (job.WebhookKeys.RotateFrom): read, then one write conditioned on the
// version read, so concurrent or retried rotations from one version make
// one new version. (One SET with
// if_not_exists on both sides would save the read, but kumo answers the
// previous version wrongly there; docs/gaps.md, "Known gaps".)
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
		o, err := t.t.change(ctx, "rotate webhook key", t.t.key(tenant), rotation(cur, next))
		switch {
		case err != nil:
			return job.WebhookKeys{}, err
		case !o.refused:
			return next, nil
		}
	}
	return job.WebhookKeys{}, unavailable("rotate webhook key", fmt.Errorf("tenant %s: rotated by others %d times", tenant, rotateTries))
}

// rotation is the write from cur to next, conditioned on cur's version
// (or, for a tenant never rotated, on there being none).
func rotation(cur, next job.WebhookKeys) *expr {
	e := newExpr()
	ver, was := e.name(tKeyVer), e.value("cur", avN(int64(cur.Current)))
	if cur.Previous == 0 && cur.Current == 1 {
		e.when("attribute_not_exists(" + ver + ") OR " + ver + " = " + was)
	} else {
		e.when(ver + " = " + was)
	}
	e.set = append(e.set, ver+" = "+e.value("next", avN(int64(next.Current))),
		e.name(tPrevVer)+" = "+e.value("prev", avN(int64(next.Previous))),
		e.name(tRotatedMS)+" = "+e.value("now", avN(next.RotatedAt.UnixMilli())))
	return e
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
	return tenantsLayout.create(ctx, c, table)
}
