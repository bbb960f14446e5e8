package memstore

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Tenants is the tenants table in memory, for tests: the same decisions
// as pkg/dynamodb's (job.WebhookKeys.RotateFrom), each in one step.
type Tenants struct {
	t table[string, job.WebhookKeys]
}

// NewTenants returns an empty tenants table.
func NewTenants() *Tenants { return &Tenants{} }

// WebhookKeys answers tenant's key versions (version 1 before any rotation).
func (t *Tenants) WebhookKeys(_ context.Context, tenant string) (job.WebhookKeys, error) {
	if k, ok := t.t.get(tenant); ok {
		return k, nil
	}
	return job.FirstWebhookKeys(tenant), nil
}

// RotateWebhookKeys rotates tenant's key away from version from.
func (t *Tenants) RotateWebhookKeys(_ context.Context, tenant string, from int, now time.Time) (job.WebhookKeys, error) {
	var next job.WebhookKeys
	var err error
	t.t.change(tenant, func(cur job.WebhookKeys, ok bool) (job.WebhookKeys, bool) {
		if !ok {
			cur = job.FirstWebhookKeys(tenant)
		}
		var rotate bool
		next, rotate, err = cur.RotateFrom(from, now)
		return next, err == nil && rotate
	})
	return next, err
}
