package app

import (
	"context"

	"github.com/aijobs/aijobs/pkg/devserver"
)

// DevServer is the local stand-in for API Gateway, the event source
// mapping and the reconciler's schedule, running this app's real handlers
// with the settings' batch size, window, concurrency, function timeouts and
// reconcile period.
func (a *App) DevServer() *devserver.Server {
	s := a.Config.Settings
	return &devserver.Server{
		Gateway: &devserver.Gateway{Handler: a.API.Handle, Timeout: s.APITimeout, MemoryMB: s.APIMemoryMB, Logger: a.Logger},
		Poller: &devserver.Poller{Source: a.Queue, Handler: a.Worker.Handle, BatchSize: s.BatchSize,
			BatchWindow: s.BatchWindow, Concurrency: s.MaxConcurrency, FunctionTimeout: s.WorkerTimeout, MemoryMB: s.WorkerMemoryMB,
			QueueARN: "arn:aws:sqs:" + a.AWS.Region + ":000000000000:" + s.QueueName(), Region: a.AWS.Region, Logger: a.Logger},
		Sweep: func(ctx context.Context) {
			if _, err := a.Reconciler.Run(ctx); err != nil {
				a.Logger.Error("reconciler sweep failed", "err", err)
			}
		},
		SweepEvery:   s.ReconcileEvery,
		Collect:      a.collect,
		CollectEvery: s.CollectEvery,
		Logger:       a.Logger,
		Streams:      a.streamPoller(),
		Callbacks:    a.callbackPoller(),
	}
}

// collect runs the batch lane's collector, as its schedule does in AWS.
func (a *App) collect(ctx context.Context) {
	if a.Collector == nil {
		return
	}
	if err := a.Collector.Run(ctx); err != nil && ctx.Err() == nil { // not the server stopping
		a.Logger.Error("batch lane collector run failed", "err", err)
	}
}

// streamPoller feeds the table's stream to the notifier as the stack's
// event source mapping does (docs/webhooks.md): in order per shard, a
// failed notice holding its shard, retried without end.
func (a *App) streamPoller() *devserver.StreamPoller {
	if a.Notifier == nil || a.Stream == nil {
		return nil
	}
	s := a.Config.Settings
	return &devserver.StreamPoller{Source: a.Stream, Handler: a.Notifier.Stream, BatchSize: StreamBatchSize,
		FunctionTimeout: s.NotifierTimeout, MemoryMB: s.NotifierMemoryMB, MaxRetries: -1, Logger: a.Logger}
}

// callbackPoller feeds the callback queue to the notifier's deliveries.
func (a *App) callbackPoller() *devserver.Poller {
	if a.Notifier == nil {
		return nil
	}
	s := a.Config.Settings
	return &devserver.Poller{Source: a.CallbackQueue, Handler: a.Notifier.Deliver, BatchSize: s.CallbackBatchSize,
		Concurrency: CallbackConcurrency, FunctionTimeout: s.NotifierTimeout, MemoryMB: s.NotifierMemoryMB,
		QueueARN: "arn:aws:sqs:" + a.AWS.Region + ":000000000000:" + s.CallbackQueueName(), Region: a.AWS.Region, Logger: a.Logger}
}

// The notifier's event source numbers, the same in the stack
// (infra/notifier.go) and the dev server: a stream batch as large as
// Lambda's default for streams, and a few concurrent deliveries.
const (
	StreamBatchSize     = 100
	CallbackConcurrency = 5
)
