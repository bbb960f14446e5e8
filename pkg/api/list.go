package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

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

// list answers GET /jobs?state=&error_class=&since=&limit=&cursor=: the
// caller's own jobs, newest first. Unknown or repeated parameters are a
// 400, like unknown body fields.
func (h *Handler) list(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	q, bad := parseList(ev.RawQueryString)
	if bad != nil {
		return h.clientProblem(ctx, log, "parse list", bad)
	}
	q.Tenant = tenant
	page, err := h.store.List(ctx, q)
	if err != nil {
		if job.ErrorCode(err) == job.CodeInvalidRequest { // a cursor the store refuses
			return h.clientProblem(ctx, log, "list", err)
		}
		return h.serverProblem(ctx, log, "list", fmt.Errorf("list jobs: %w", err))
	}
	out := Page{Jobs: make([]Summary, 0, len(page.Jobs)), NextCursor: page.Next}
	for _, j := range page.Jobs {
		out.Jobs = append(out.Jobs, summaryOf(j))
	}
	body, err := json.Marshal(out)
	if err != nil {
		return h.serverProblem(ctx, log, "list", fmt.Errorf("encode the list: %w", err))
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}

func summaryOf(j job.Job) Summary {
	v := NewView(j)
	return Summary{ID: v.ID, State: v.State, RequestKey: v.RequestKey, InputHash: v.InputHash, Model: v.Model,
		Attempts: v.Attempts, MaxAttempts: v.MaxAttempts, CostCents: v.CostCents, BudgetCents: v.BudgetCents,
		ErrorClass: v.ErrorClass, ResultModel: v.ResultModel, Replays: j.Replays, CreatedAt: v.CreatedAt, Deadline: v.Deadline}
}
