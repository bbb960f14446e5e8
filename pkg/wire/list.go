package wire

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Summary is a job as GET /jobs lists it, and as pkg/client reads it: the
// view's fields that change only with the job's state (the list is served
// from an index that heartbeats never write), under the view's own names,
// and how often an operator replayed it. Fetch the job for its progress,
// result and version.
type Summary struct {
	ID          string          `json:"id"`
	State       job.State       `json:"state"`
	RequestKey  string          `json:"request_key"`
	InputHash   string          `json:"input_hash"`
	Model       string          `json:"model"`
	Attempts    int             `json:"attempts"`
	MaxAttempts int             `json:"max_attempts"`
	CostCents   job.Nanocents   `json:"cost_cents"`
	BudgetCents job.Nanocents   `json:"budget_cents"`
	ErrorClass  *job.ErrorClass `json:"error_class"`
	ResultModel string          `json:"result_model,omitempty"`
	Replays     int             `json:"replays,omitempty"`
	CreatedAt   Time            `json:"created_at"`
	Deadline    Time            `json:"deadline"`
}

// NewSummary is the summary of j, built from its view so that the two
// show each field alike.
func NewSummary(j job.Job) Summary {
	v := NewView(j)
	return Summary{ID: v.ID, State: v.State, RequestKey: v.RequestKey, InputHash: v.InputHash, Model: v.Model,
		Attempts: v.Attempts, MaxAttempts: v.MaxAttempts, CostCents: v.CostCents, BudgetCents: v.BudgetCents,
		ErrorClass: v.ErrorClass, ResultModel: v.ResultModel, Replays: j.Replays, CreatedAt: v.CreatedAt, Deadline: v.Deadline}
}

// Class is the error class, "" when there is none.
func (s Summary) Class() job.ErrorClass { return classOf(s.ErrorClass) }

// Page is the answer of GET /jobs: a page of summaries, newest first.
type Page struct {
	Jobs []Summary `json:"jobs"`
	// NextCursor continues the listing (the cursor query parameter); ""
	// on the last page, which the API writes as null.
	NextCursor string `json:"next_cursor"`
}

// MarshalJSON writes the page as the API sends it: an empty cursor is null
// and no jobs is an empty list.
func (p Page) MarshalJSON() ([]byte, error) {
	out := struct {
		Jobs       []Summary `json:"jobs"`
		NextCursor *string   `json:"next_cursor"`
	}{Jobs: p.Jobs}
	if out.Jobs == nil {
		out.Jobs = []Summary{}
	}
	if p.NextCursor != "" {
		out.NextCursor = &p.NextCursor
	}
	return json.Marshal(out)
}

// The query parameters GET /jobs takes, named once: ListQuery writes them
// and the API reads them, so the two sides cannot drift apart.
const (
	ParamState  = "state"
	ParamClass  = "error_class"
	ParamSince  = "since"
	ParamLimit  = "limit"
	ParamCursor = "cursor"
)

// ListQuery is the query of GET /jobs as pkg/client sends it; the API
// reads the same parameters into a job.ListQuery. Zero fields are left
// out.
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
		v.Set(ParamState, string(q.State))
	}
	if q.ErrorClass != "" {
		v.Set(ParamClass, string(q.ErrorClass))
	}
	if !q.Since.IsZero() {
		v.Set(ParamSince, q.Since.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		v.Set(ParamLimit, strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set(ParamCursor, q.Cursor)
	}
	return v
}
