package api

import (
	"net/url"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The query parameters GET /jobs takes: ListQuery writes them, parseList
// reads them.
const (
	paramState  = "state"
	paramClass  = "error_class"
	paramSince  = "since"
	paramLimit  = "limit"
	paramCursor = "cursor"
)

var listParams = map[string]bool{paramState: true, paramClass: true, paramSince: true, paramLimit: true, paramCursor: true}

// ListQuery is the query of GET /jobs as pkg/client sends it; the handler
// reads the same parameters into a job.ListQuery (parseList). Zero fields
// are left out.
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

// Values is the query string of q.
func (q ListQuery) Values() url.Values {
	v := url.Values{}
	if q.State != "" {
		v.Set(paramState, string(q.State))
	}
	if q.ErrorClass != "" {
		v.Set(paramClass, string(q.ErrorClass))
	}
	if !q.Since.IsZero() {
		v.Set(paramSince, q.Since.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		v.Set(paramLimit, strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set(paramCursor, q.Cursor)
	}
	return v
}

// parseList reads a GET /jobs query; unknown or repeated parameters are
// refused, like unknown body members.
func parseList(raw string) (job.ListQuery, *Error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return job.ListQuery{}, invalid("", "the query string is not valid")
	}
	var q job.ListQuery
	for name, vs := range vals {
		if !listParams[name] {
			return q, invalid(name, "unknown query parameter; GET /jobs takes state, error_class, since, limit and cursor")
		}
		if len(vs) != 1 {
			return q, invalid(name, "give %s once", name)
		}
		v := vs[0]
		switch name {
		case paramState:
			if q.State = job.State(v); !q.State.Valid() {
				return q, invalid(name, "want queued, running, succeeded, failed or abandoned")
			}
		case paramClass:
			if q.Class = job.ErrorClass(v); !q.Class.Valid() {
				return q, invalid(name, "not an error class (see docs/errors.md)")
			}
		case paramSince:
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return q, invalid(name, "want an RFC 3339 time such as 2026-12-02T10:00:00Z")
			}
			q.Since = t
		case paramLimit:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > job.MaxListLimit {
				return q, invalid(name, "want a whole number from 1 to %d", job.MaxListLimit)
			}
			q.Limit = n
		case paramCursor:
			if _, err := job.ParseCursor(v); err != nil {
				return q, invalid(name, "the cursor is not one this API returned")
			}
			q.Cursor = v
		}
	}
	return q, nil
}
