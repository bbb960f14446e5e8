// Package workerrole wires the worker function's role: its providers
// (pkg/app/providers), the parking lot (pkg/app/lot) and the worker over
// them. It does not build the batch lane's collector, which runs in its
// own function (pkg/app/collectorrole), so the worker does not link it
// (internal/archtest's TestEachFunctionLinksOnlyItsRole).
package workerrole

import (
	"context"

	"github.com/aijobs/aijobs/pkg/app/lot"
	"github.com/aijobs/aijobs/pkg/app/payloads"
	"github.com/aijobs/aijobs/pkg/app/providers"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// Handler is the worker function's Lambda handler (roles.Lambda): its
// providers as configured, and the worker over them.
func Handler(ctx context.Context, b *roles.Base) (any, error) {
	p, err := providers.New(ctx, b, providers.Options{})
	if err != nil {
		return nil, err
	}
	return New(b, p).Handle, nil
}

// New is the worker over providers, the configured parking lot and the
// payload store its large answers go to.
func New(b *roles.Base, providers map[string]model.Provider) *worker.Worker {
	s := b.Config.Settings
	var metrics worker.Metrics
	if b.Metrics != nil {
		metrics = b.Metrics
	}
	cfg := worker.Config{
		Store: b.Store, Queue: b.Queue, Clock: b.Clock, Logger: b.Logger, Retention: s.Retention, Metrics: metrics,
		Routes: b.Config.Routes, Providers: providers, ReceiveLimit: s.MaxReceiveCount, Parking: lot.New(b), Workers: s.MaxConcurrency,
		Answers: payloads.New(b),
		Inputs:  payloads.New(b),
		Timing: worker.Timing{Heartbeat: s.Heartbeat, LeaseTTL: s.LeaseTTL, LeaseMargin: s.GuardMargin(), AttemptMargin: s.AttemptMargin, CollectEvery: s.CollectEvery,
			LambdaMargin: s.LambdaMargin, BackoffBase: s.BackoffBase, BackoffMax: s.BackoffMax, RequeueAfter: s.RequeueAfter},
	}
	if b.Quarantines != nil {
		cfg.Quarantine, cfg.QuarantineFor = b.Quarantines, s.QuarantineFor
	}
	if b.Config.RateLimited() {
		cfg.Buckets = dynamodb.NewBuckets(b.Side, b.Config.BucketsTable).SplitAt(int64(b.Config.BucketPartRPM))
	}
	if b.Config.InFlight.Any() {
		cfg.Slots, cfg.InFlight = dynamodb.NewSlots(b.Side, b.Config.BucketsTable), b.Config.InFlight.For
	}
	if b.Config.Queued.Any() {
		cfg.Queued, cfg.QueuedLimit = dynamodb.NewQueueSlots(b.Side, b.Config.BucketsTable), b.Config.Queued.For
	}
	if b.Config.Spend.Any() {
		cfg.Spend, cfg.SpendLimits = dynamodb.NewSpend(b.Side, b.Config.BucketsTable), b.Config.Spend.For
		cfg.SpendAlarmShare, cfg.SpendDigest = b.Config.SpendAlarmShare, b.Config.Spend.Digest()
	}
	return worker.New(cfg)
}
