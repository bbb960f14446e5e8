// Package reconcilerrole wires the reconciler function's role: the
// reconciler over the shared wiring (pkg/app/roles) and the parking lot
// (pkg/app/lot), and the tenants' spend balances where limits are set.
// It links no model provider, worker nor collector.
package reconcilerrole

import (
	"context"

	"github.com/aijobs/aijobs/pkg/app/lot"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/parking"
	"github.com/aijobs/aijobs/pkg/reconciler"
)

// Handler is the reconciler function's Lambda handler (roles.Lambda).
func Handler(_ context.Context, b *roles.Base) (any, error) { return New(b).Handle, nil }

// New is the reconciler over the configured parking lot.
func New(b *roles.Base) *reconciler.Reconciler {
	s := b.Config.Settings
	var metrics reconciler.Metrics
	if b.Metrics != nil {
		metrics = b.Metrics
	}
	cfg := reconciler.Config{Store: b.Store, Queue: b.Queue, After: s.ReconcileAfter, ResendMax: s.ReconcileResendMax,
		Retention: s.Retention, Clock: b.Clock, Logger: b.Logger, Metrics: metrics, Parking: lot.New(b)}
	if b.Config.Spend.Any() {
		cfg.SpendFirst = &parking.SpendFirst{Balances: dynamodb.NewSpend(b.Side, b.Config.BucketsTable), Limits: b.Config.Spend.For, Digest: b.Config.Spend.Digest()}
	}
	return reconciler.New(cfg)
}
