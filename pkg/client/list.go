package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aijobs/aijobs/pkg/wire"
)

// ListQuery filters GET /jobs (wire.ListQuery). Zero fields
// are left out of the query.
type ListQuery = wire.ListQuery

// List reads one page of the caller's jobs (GET /jobs). Follow
// Page.NextCursor (in ListQuery.Cursor) until it is "" for the rest.
func (c *Client) List(ctx context.Context, q ListQuery) (Page, error) {
	if q.Limit < 0 {
		return Page{}, fmt.Errorf("aijobs API: list limit %d is negative", q.Limit)
	}
	a, err := c.call(ctx, request{method: http.MethodGet, path: "/jobs", query: q.Values()}, http.StatusOK)
	if err != nil {
		return Page{}, err
	}
	var p Page
	if err := json.Unmarshal(a.body, &p); err != nil {
		return Page{}, fmt.Errorf("aijobs API: decode the job list: %w", err)
	}
	return p, nil
}
