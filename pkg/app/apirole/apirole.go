// Package apirole wires the API function's role: the API handler on the
// shared wiring (pkg/app/roles) and its webhook key routes. It links no
// worker, reconciler, collector nor model provider, so the internet-facing
// function carries only its own code (docs/benchmarks.md, "Cold start and
// size"; internal/archtest's TestEachFunctionLinksOnlyItsRole).
package apirole

import (
	"context"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/app/payloads"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// Handler is the API function's Lambda handler (roles.Lambda).
func Handler(_ context.Context, b *roles.Base) (any, error) { return New(b).Handle, nil }

// New is the API's handler, its webhook key routes included when the
// deployment delivers callbacks (else they answer 404).
func New(b *roles.Base) *api.Handler {
	s := b.Config.Settings
	var callbacks api.CallbackChecker
	if b.Config.Callbacks {
		callbacks = webhook.Checker{Policy: webhook.Policy{AllowLoopback: s.CallbackLoopback}}
	}
	cfg := api.Config{Store: b.Store, Queue: b.Queue, Limits: s.Limits, Retention: s.Retention, Routes: b.Config.Routes,
		Clock: b.Clock, EnqueueRetryAfter: s.EnqueueRetryAfter, Callbacks: callbacks, Signing: signing(b), Logger: b.Logger,
		ResultLinks: payloads.NewLinks(b), Payloads: inputs{payloads.New(b)}}
	if b.Quarantines != nil { // a nil *Quarantines in the interface would not be nil
		cfg.Quarantines = b.Quarantines
	}
	if b.Config.Queued.Any() {
		cfg.Queued, cfg.QueuedLimit = dynamodb.NewQueueSlots(b.Side, b.Config.BucketsTable), b.Config.Queued.For
	}
	if b.Config.Spend.Any() {
		cfg.Spend, cfg.SpendLimits = dynamodb.NewSpend(b.Side, b.Config.BucketsTable), b.Config.Spend.For
	}
	return api.New(cfg)
}
