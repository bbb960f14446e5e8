package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aijobs/aijobs/pkg/wire"
)

// Spend is the caller's spend against its limits (docs/spend.md): one
// period a limit, each with what was spent, what attempts in flight
// hold, what is left, and when the period ends.
type Spend = wire.Spend

// Spend reads the caller's own tenant's spend against its limits; a
// tenant with no limit has no periods. A create the limit refuses fails
// with the code spend_limit and a RetryAfter of the period's end.
func (c *Client) Spend(ctx context.Context) (Spend, error) {
	a, err := c.call(ctx, request{method: http.MethodGet, path: "/spend"}, http.StatusOK)
	if err != nil {
		return Spend{}, err
	}
	var s Spend
	if err := json.Unmarshal(a.body, &s); err != nil {
		return Spend{}, fmt.Errorf("aijobs API: decode the spend (status %d): %w", a.status, err)
	}
	return s, nil
}
