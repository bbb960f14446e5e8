package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aijobs/aijobs/pkg/wire"
)

// Quote is what a job would cost before it is created (docs/spend.md,
// "A quote before the spend"): its worst cases, exact at today's prices,
// an expected cost, an estimate, and whether the caller's spend limits
// cover its first attempt now.
type Quote = wire.Quote

// Quote asks what a job with req's body would cost (POST /quotes). Nothing
// is recorded, so it takes no idempotency key and is safe to repeat; a
// body a create would refuse is refused with the same *Error.
func (c *Client) Quote(ctx context.Context, req CreateBody) (Quote, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Quote{}, fmt.Errorf("aijobs API: encode the quote request: %w", err)
	}
	a, err := c.call(ctx, request{method: http.MethodPost, path: "/quotes", body: body}, http.StatusOK)
	if err != nil {
		return Quote{}, err
	}
	var q Quote
	if err := json.Unmarshal(a.body, &q); err != nil {
		return Quote{}, fmt.Errorf("aijobs API: decode the quote (status %d): %w", a.status, err)
	}
	return q, nil
}
