// Package collectorrole wires the batch lane's collector function
// (docs/lanes.md, "The batch lane"): the providers its lanes call
// (pkg/app/providers) and the collector over them. Only the collector
// function and the dev server import it, so the worker does not link the
// collector (internal/archtest's TestEachFunctionLinksOnlyItsRole).
package collectorrole

import (
	"context"
	"errors"

	"github.com/aijobs/aijobs/pkg/app/payloads"
	"github.com/aijobs/aijobs/pkg/app/providers"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Handler is the collector function's Lambda handler (roles.Lambda): one
// collector run per scheduled invocation. A failed run is the
// invocation's error, so Lambda counts it in the function's Errors (the
// CollectorErrors alarm); the next run carries on from the batch records.
// Without a batch lane there is nothing to collect, and the function
// fails at init rather than run idle.
func Handler(ctx context.Context, b *roles.Base) (any, error) {
	c, _, err := New(ctx, b, providers.Options{})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("collector: no route offers a batch lane, so there is nothing to collect")
	}
	return func(ctx context.Context) error { return c.Run(ctx) }, nil
}

// New builds the providers the routes' batch lanes call
// (job.BatchLaneProviders), and no other, so the collector reads only
// their keys, and the collector over them; nil when no route offers a
// batch lane. o's replacements apply as for providers.New.
func New(ctx context.Context, b *roles.Base, o providers.Options) (*collector.Collector, map[string]model.Provider, error) {
	names := job.BatchLaneProviders(b.Config.Routes)
	if len(names) == 0 {
		return nil, nil, nil
	}
	o.Only = names
	p, err := providers.New(ctx, b, o)
	if err != nil {
		return nil, nil, err
	}
	return Over(b, p), p, nil
}

// Over is the batch lane's collector over providers, its batch records
// on the buckets table; nil when no route offers a batch lane. The dev
// server's collector shares the worker's providers.
func Over(b *roles.Base, providers map[string]model.Provider) *collector.Collector {
	if !job.AnyBatchLane(b.Config.Routes) {
		return nil
	}
	s := b.Config.Settings
	// A nil *emf.Writer in the interface would not be nil: metrics off
	// leave it unset, and the collector counts into nothing.
	var m collector.Metrics
	if b.Metrics != nil {
		m = b.Metrics
	}
	// The next run reaches a job up to a period and a run's longest time
	// after this one: a job must be handed back before that.
	cfg := collector.Config{Store: b.Store, Batches: dynamodb.NewBatches(b.Side, b.Config.BucketsTable), Queue: b.Queue,
		Providers: providers, Routes: b.Config.Routes, Clock: b.Clock, Retention: s.Retention, Logger: b.Logger,
		Every: s.CollectEvery + s.CollectorTimeout, Metrics: m, Answers: payloads.New(b), Inputs: payloads.New(b)}
	if b.Quarantines != nil { // a nil *Quarantines in the interface would not be nil
		cfg.Quarantine, cfg.QuarantineFor = b.Quarantines, s.QuarantineFor
	}
	return collector.New(cfg)
}
