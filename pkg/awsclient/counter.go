package awsclient

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/middleware"
	smithymw "github.com/aws/smithy-go/middleware"
)

// Counter counts AWS API calls by "Service.Operation", for the benchmark's
// calls-per-job figure. Retries are not counted twice: it sits before the
// retry loop, so it counts what the code asked for.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{counts: map[string]int{}} }

func (c *Counter) middleware(stack *smithymw.Stack) error {
	return stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("aijobsCallCounter",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			c.add(middleware.GetServiceID(ctx) + "." + middleware.GetOperationName(ctx))
			return next.HandleInitialize(ctx, in)
		}), smithymw.Before)
}

func (c *Counter) add(op string) {
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.counts = map[string]int{}
	c.mu.Unlock()
}
