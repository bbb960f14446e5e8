package app

import (
	"github.com/aijobs/aijobs/pkg/devserver"
)

// DevServer is the local stand-in for API Gateway and the event source
// mapping, running this app's real handlers with the settings' batch size,
// window, concurrency and function timeouts.
func (a *App) DevServer() *devserver.Server {
	s := a.Config.Settings
	return &devserver.Server{
		Gateway: &devserver.Gateway{Handler: a.API.Handle, Timeout: s.APITimeout, Logger: a.Logger},
		Poller: &devserver.Poller{Source: a.Queue, Handler: a.Worker.Handle, BatchSize: s.BatchSize,
			BatchWindow: s.BatchWindow, Concurrency: s.MaxConcurrency, FunctionTimeout: s.WorkerTimeout,
			QueueARN: "arn:aws:sqs:" + a.AWS.Region + ":000000000000:" + s.QueueName(), Region: a.AWS.Region, Logger: a.Logger},
		Logger: a.Logger,
	}
}
