package awsclient

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithymw "github.com/aws/smithy-go/middleware"
)

// Counter counts AWS API calls by "Service.Operation", for the benchmark's
// calls-per-job figure. Retries are not counted twice: it sits before the
// retry loop, so it counts what the code asked for. It also splits
// DynamoDB GetItem calls by read consistency, because the two are billed
// differently (an eventually consistent read costs half a read unit) and
// the benchmark prices them.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
	// consistent and eventual split the "DynamoDB.GetItem" count; kept
	// apart from counts so the per-operation totals stay sums of real
	// operations.
	consistent, eventual int
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{counts: map[string]int{}} }

func (c *Counter) middleware(stack *smithymw.Stack) error {
	return stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("aijobsCallCounter",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			c.add(middleware.GetServiceID(ctx)+"."+middleware.GetOperationName(ctx), in.Parameters)
			return next.HandleInitialize(ctx, in)
		}), smithymw.Before)
}

func (c *Counter) add(op string, params any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[op]++
	if in, ok := params.(*dynamodb.GetItemInput); ok {
		// An unset ConsistentRead is DynamoDB's default: eventually
		// consistent.
		if in.ConsistentRead != nil && *in.ConsistentRead {
			c.consistent++
		} else {
			c.eventual++
		}
	}
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

// GetItems returns the DynamoDB GetItem calls so far, strongly consistent
// and eventually consistent; together they are Snapshot's
// "DynamoDB.GetItem".
func (c *Counter) GetItems() (consistent, eventual int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consistent, c.eventual
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.counts = map[string]int{}
	c.consistent, c.eventual = 0, 0
	c.mu.Unlock()
}
