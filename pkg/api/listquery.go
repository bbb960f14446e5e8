package api

import (
	"net/url"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// listParams are the parameters parseList reads (wire.ListQuery writes
// them).
var listParams = map[string]bool{wire.ParamState: true, wire.ParamClass: true, wire.ParamSince: true, wire.ParamLimit: true, wire.ParamCursor: true}

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
		case wire.ParamState:
			if q.State = job.State(v); !q.State.Valid() {
				return q, invalid(name, "want queued, running, succeeded, failed or abandoned")
			}
		case wire.ParamClass:
			if q.Class = job.ErrorClass(v); !q.Class.Valid() {
				return q, invalid(name, "not an error class (see docs/errors.md)")
			}
		case wire.ParamSince:
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return q, invalid(name, "want an RFC 3339 time such as 2026-12-02T10:00:00Z")
			}
			q.Since = t
		case wire.ParamLimit:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > job.MaxListLimit {
				return q, invalid(name, "want a whole number from 1 to %d", job.MaxListLimit)
			}
			q.Limit = n
		case wire.ParamCursor:
			if _, err := job.ParseCursor(v); err != nil {
				return q, invalid(name, "the cursor is not one this API returned")
			}
			q.Cursor = v
		}
	}
	return q, nil
}
