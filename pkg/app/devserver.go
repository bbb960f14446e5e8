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
		Gateway: &devserver.Gateway{Handler: a.API.Handle, Timeout: s.APITimeout, Logger: a.Logger},
		Poller: &devserver.Poller{Source: a.Queue, Handler: a.Worker.Handle, BatchSize: s.BatchSize,
			BatchWindow: s.BatchWindow, Concurrency: s.MaxConcurrency, FunctionTimeout: s.WorkerTimeout,
			QueueARN: "arn:aws:sqs:" + a.AWS.Region + ":000000000000:" + s.QueueName(), Region: a.AWS.Region, Logger: a.Logger},
		Sweep: func(ctx context.Context) {
			if _, err := a.Reconciler.Run(ctx); err != nil {
				a.Logger.Error("reconciler sweep failed", "err", err)
			}
		},
		SweepEvery: s.ReconcileEvery,
		Logger:     a.Logger,
	}
}
