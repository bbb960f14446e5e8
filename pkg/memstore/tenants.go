package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Tenants is the tenants table in memory, for tests: the same decisions
// as pkg/dynamodb's (job.WebhookKeys.RotateFrom), under one lock.
type Tenants struct {
	mu   sync.Mutex
	keys map[string]job.WebhookKeys
}

// NewTenants returns an empty tenants table.
func NewTenants() *Tenants { return &Tenants{keys: map[string]job.WebhookKeys{}} }

// WebhookKeys answers tenant's key versions (version 1 before any rotation).
func (t *Tenants) WebhookKeys(_ context.Context, tenant string) (job.WebhookKeys, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.keys[tenant]; ok {
		return k, nil
	}
	return job.FirstWebhookKeys(tenant), nil
}

// RotateWebhookKeys rotates tenant's key away from version from.
func (t *Tenants) RotateWebhookKeys(ctx context.Context, tenant string, from int, now time.Time) (job.WebhookKeys, error) {
	cur, _ := t.WebhookKeys(ctx, tenant)
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.keys[tenant]; ok {
		cur = k
	}
	next, rotate, err := cur.RotateFrom(from, now)
	if err == nil && rotate {
		t.keys[tenant] = next
	}
	return next, err
}
