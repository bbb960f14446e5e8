package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// TimeFormat is how the API writes times (RFC 3339, UTC, milliseconds).
// View writes them back the same way, so a view re-encoded by this package
// is the server's JSON.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// View is a job as the API shows it to its owner (the server's job view,
// field for field). Money is exact: cost_cents and budget_cents are decimal
// JSON numbers of cents, read into job.Nanocents without a float.
type View struct {
	ID          string    `json:"id"`
	State       job.State `json:"state"`
	RequestKey  string    `json:"request_key"`
	InputHash   string    `json:"input_hash"`
	Model       string    `json:"model"`
	Attempts    int       `json:"attempts"`
	MaxAttempts int       `json:"max_attempts"`
	// Progress is 0..1 while running (tokens streamed / max tokens).
	Progress float64 `json:"progress"`
	// CostCents counts every attempt, including discarded results.
	CostCents job.Nanocents `json:"cost_cents"`
	// CostEstimated says CostCents includes an upper estimate for a call
	// whose usage the provider never reported.
	CostEstimated bool          `json:"cost_estimated"`
	BudgetCents   job.Nanocents `json:"budget_cents"`
	// ReservedCents is what attempts in flight hold of the budget.
	ReservedCents job.Nanocents `json:"reserved_cents"`
	// ErrorClass is nil unless the job has one; always nil once succeeded.
	ErrorClass *job.ErrorClass `json:"error_class"`
	// Result is the model output (succeeded only), else nil.
	Result      json.RawMessage `json:"result"`
	ResultModel string          `json:"result_model,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Deadline    time.Time       `json:"deadline"`
	// Version increments with every write; the ETag is its quoted value.
	Version int64 `json:"version"`
}

// Terminal reports whether the job will never change again on its own.
func (v View) Terminal() bool { return v.State.Terminal() }

// Class is the error class, "" when there is none.
func (v View) Class() job.ErrorClass {
	if v.ErrorClass == nil {
		return ""
	}
	return *v.ErrorClass
}

// viewJSON is View with its times as the server writes them.
type viewJSON struct {
	ID          string          `json:"id"`
	State       job.State       `json:"state"`
	RequestKey  string          `json:"request_key"`
	InputHash   string          `json:"input_hash"`
	Model       string          `json:"model"`
	Attempts    int             `json:"attempts"`
	MaxAttempts int             `json:"max_attempts"`
	Progress    float64         `json:"progress"`
	CostCents   job.Nanocents   `json:"cost_cents"`
	Estimated   bool            `json:"cost_estimated"`
	BudgetCents job.Nanocents   `json:"budget_cents"`
	Reserved    job.Nanocents   `json:"reserved_cents"`
	ErrorClass  *job.ErrorClass `json:"error_class"`
	Result      json.RawMessage `json:"result"`
	ResultModel string          `json:"result_model,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	Deadline    string          `json:"deadline"`
	Version     int64           `json:"version"`
}

// MarshalJSON writes the view as the server does (times with
// milliseconds), so printing a view shows what the API sent.
func (v View) MarshalJSON() ([]byte, error) {
	return json.Marshal(viewJSON{
		ID: v.ID, State: v.State, RequestKey: v.RequestKey, InputHash: v.InputHash,
		Model: v.Model, Attempts: v.Attempts, MaxAttempts: v.MaxAttempts, Progress: v.Progress,
		CostCents: v.CostCents, Estimated: v.CostEstimated, BudgetCents: v.BudgetCents, Reserved: v.ReservedCents, ErrorClass: v.ErrorClass,
		Result: v.Result, ResultModel: v.ResultModel, Metadata: v.Metadata,
		CreatedAt: formatTime(v.CreatedAt), UpdatedAt: formatTime(v.UpdatedAt),
		Deadline: formatTime(v.Deadline), Version: v.Version,
	})
}

// UnmarshalJSON reads the server's view; a null result or metadata becomes
// nil (json.RawMessage would otherwise hold the four bytes "null").
func (v *View) UnmarshalJSON(b []byte) error {
	type plain View // no methods: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if string(p.Result) == "null" {
		p.Result = nil
	}
	if string(p.Metadata) == "null" {
		p.Metadata = nil
	}
	*v = View(p)
	return nil
}

func formatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// CreateRequest is the body of POST /jobs. Only Input is required; a zero
// option is left out, so the server's configured default applies.
type CreateRequest struct {
	// Model names a route the server knows; "" means its default.
	Model string `json:"model,omitempty"`
	// Input is the model input: {"messages": [...], "max_tokens": N}.
	// UserPrompt builds the common case.
	Input json.RawMessage `json:"input"`
	// DeadlineSeconds is how long the job may take, from its creation.
	DeadlineSeconds int `json:"deadline_seconds,omitempty"`
	// BudgetCents bounds what all attempts together may cost.
	BudgetCents job.Nanocents `json:"budget_cents,omitempty"`
	// MaxAttempts bounds the claims the job may get.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Metadata is any JSON object, returned as given.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Message is one chat message of the input.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UserPrompt is the input of one user message; maxTokens 0 leaves
// max_tokens to the server's default.
func UserPrompt(prompt string, maxTokens int) json.RawMessage {
	in := struct {
		Messages  []Message `json:"messages"`
		MaxTokens int       `json:"max_tokens,omitempty"`
	}{Messages: []Message{{Role: "user", Content: prompt}}, MaxTokens: maxTokens}
	b, err := json.Marshal(in)
	if err != nil { // strings and ints always encode
		panic(fmt.Sprintf("client: encode a prompt: %v", err))
	}
	return b
}

// Page is one answer of GET /jobs.
type Page struct {
	Jobs []View `json:"jobs"`
	// NextCursor continues the listing; "" on the last page (the API's
	// null).
	NextCursor string `json:"next_cursor"`
}

// MarshalJSON writes the page as the API does: an empty cursor is null and
// no jobs is an empty list.
func (p Page) MarshalJSON() ([]byte, error) {
	out := struct {
		Jobs       []View  `json:"jobs"`
		NextCursor *string `json:"next_cursor"`
	}{Jobs: p.Jobs}
	if out.Jobs == nil {
		out.Jobs = []View{}
	}
	if p.NextCursor != "" {
		out.NextCursor = &p.NextCursor
	}
	return json.Marshal(out)
}
