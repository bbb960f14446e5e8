package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// ListQuery filters GET /jobs. Zero fields are left out of the query.
type ListQuery struct {
	State      job.State
	ErrorClass job.ErrorClass
	// Since keeps jobs from this time on; sent as RFC 3339 in UTC,
	// truncated to the second (so never later than asked).
	Since time.Time
	// Limit is the page size; 0 leaves it to the server.
	Limit int
	// Cursor continues from Page.NextCursor.
	Cursor string
}

// values is the query string of q.
func (q ListQuery) values() url.Values {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", string(q.State))
	}
	if q.ErrorClass != "" {
		v.Set("error_class", string(q.ErrorClass))
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	return v
}

// List reads one page of the caller's jobs (GET /jobs). Follow
// Page.NextCursor (in ListQuery.Cursor) until it is "" for the rest.
func (c *Client) List(ctx context.Context, q ListQuery) (Page, error) {
	if q.Limit < 0 {
		return Page{}, fmt.Errorf("aijobs API: list limit %d is negative", q.Limit)
	}
	a, err := c.call(ctx, request{method: http.MethodGet, path: "/jobs", query: q.values()}, http.StatusOK)
	if err != nil {
		return Page{}, err
	}
	var p Page
	if err := json.Unmarshal(a.body, &p); err != nil {
		return Page{}, fmt.Errorf("aijobs API: decode the job list: %w", err)
	}
	return p, nil
}
