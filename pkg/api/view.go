package api

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// View is the job as a client sees it: no tenant, no lease owner, no input.
type View struct {
	ID          string          `json:"id"`
	State       job.State       `json:"state"`
	RequestKey  string          `json:"request_key"`
	InputHash   string          `json:"input_hash"`
	Model       string          `json:"model"`
	Attempts    int             `json:"attempts"`
	MaxAttempts int             `json:"max_attempts"`
	Progress    float64         `json:"progress"`
	CostCents   job.Nanocents   `json:"cost_cents"`
	BudgetCents job.Nanocents   `json:"budget_cents"`
	ErrorClass  *job.ErrorClass `json:"error_class"`
	Result      json.RawMessage `json:"result"`
	ResultModel string          `json:"result_model,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	Deadline    string          `json:"deadline"`
	Version     int64           `json:"version"`
}

const rfc3339Millis = "2006-01-02T15:04:05.000Z07:00"

// NewView renders a job record for clients.
func NewView(j job.Job) View {
	v := View{
		ID: j.ID, State: j.State, RequestKey: j.RequestKey, InputHash: j.InputHash, Model: j.Model,
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Progress: j.Progress,
		CostCents: j.Cost, BudgetCents: j.Budget, ResultModel: j.ResultModel, Metadata: j.Metadata,
		CreatedAt: j.CreatedAt.UTC().Format(rfc3339Millis), UpdatedAt: j.UpdatedAt.UTC().Format(rfc3339Millis),
		Deadline: j.Deadline.UTC().Format(rfc3339Millis), Version: j.Version,
		Result: json.RawMessage("null"),
	}
	if j.ErrorClass != "" && j.State != job.Succeeded {
		c := j.ErrorClass
		v.ErrorClass = &c
	}
	if len(j.Result) > 0 && j.State == job.Succeeded {
		v.Result = j.Result
	}
	return v
}

func viewResponse(status int, j job.Job, now time.Time) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(NewView(j))
	h := cacheHeaders(j, now)
	h["Content-Type"] = "application/json"
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(b)}
}
