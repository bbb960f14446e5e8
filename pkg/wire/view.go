package wire

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// View is a job as the API shows it to its owner: what POST /jobs,
// GET /jobs/{id} and the cancel answer, and what pkg/client decodes them
// into. It leaves out what a caller must not see or need not carry back:
// the tenant, the lease, the input and the error detail. Progress is 0..1
// while running (tokens streamed / max tokens); cost_cents counts every
// attempt, discarded results included; money is exact (decimal JSON
// numbers of cents, read into job.Nanocents without a float); the ETag is
// the quoted version, which every write increments.
type View struct {
	ID          string        `json:"id"`
	State       job.State     `json:"state"`
	RequestKey  string        `json:"request_key"`
	InputHash   string        `json:"input_hash"`
	Model       string        `json:"model"`
	Attempts    int           `json:"attempts"`
	MaxAttempts int           `json:"max_attempts"`
	Progress    float64       `json:"progress"`
	CostCents   job.Nanocents `json:"cost_cents"`
	// CostEstimated says cost_cents includes an upper estimate for a call
	// whose usage the provider never reported (its answer was lost after
	// the request was sent): the provider billed at most that much.
	CostEstimated bool          `json:"cost_estimated"`
	BudgetCents   job.Nanocents `json:"budget_cents"`
	// SavedCents is what the job's calls cost less than they would have
	// in their rungs' standard lanes, over every attempt (negative when a
	// priority lane cost more): the money its lanes saved.
	SavedCents job.Nanocents `json:"saved_cents"`
	// Held is the hold (job.Job.Held): what attempts in flight hold of the
	// budget until their cost is settled (a worker that died keeps its
	// hold). It was named reserved_cents on the wire before the glossary
	// settled "reserve" (an attempt's first rung's worst case) and "hold"
	// as two things, and keeps that name for the clients that read it:
	// this tag is the one place the wire name is mapped.
	Held job.Nanocents `json:"reserved_cents"`
	// ErrorClass is null unless the job has one; always null once succeeded.
	ErrorClass *job.ErrorClass `json:"error_class"`
	// Result is the stored model output (a Result's JSON as the worker
	// wrote it, passed on byte for byte), or null (nil once read).
	Result json.RawMessage `json:"result"`
	// ResultURL is where an answer too large for the record is read
	// instead (result is null then): a plain GET of it answers the
	// Result's JSON until ResultExpiresAt; a new poll gives a fresh link.
	// ResultBytes and ResultHash ("sha256:<hex>", as input_hash) are what
	// the body read must be. All absent for an answer inline
	// (docs/payloads.md, "Answers").
	ResultURL       string `json:"result_url,omitempty"`
	ResultExpiresAt *Time  `json:"result_expires_at,omitempty"`
	ResultBytes     int64  `json:"result_bytes,omitempty"`
	ResultHash      string `json:"result_hash,omitempty"`
	ResultModel     string `json:"result_model,omitempty"`
	// ResultLane is the lane the result was served in.
	ResultLane job.Lane `json:"result_lane,omitempty"`
	// Lanes are the lanes the create allowed; absent when it named none.
	Lanes []job.Lane `json:"lanes,omitempty"`
	// AttemptLanes are, per settled attempt that made a call, the lane
	// of its last call: what each attempt was priced at.
	AttemptLanes []job.AttemptLane `json:"attempt_lanes,omitempty"`
	Metadata     json.RawMessage   `json:"metadata,omitempty"`
	CreatedAt    Time              `json:"created_at"`
	UpdatedAt    Time              `json:"updated_at"`
	Deadline     Time              `json:"deadline"`
	Version      int64             `json:"version"`
	// Callback is the job's callback and what became of its deliveries;
	// absent when the create named none.
	Callback *CallbackView `json:"callback,omitempty"`
}

// CallbackView is a job's callback as its owner sees it (docs/webhooks.md).
type CallbackView struct {
	URL string `json:"url"`
	// Events are the states delivered, the defaults filled in.
	Events []job.State `json:"events"`
	// Attempts counts every delivery tried, failed ones included.
	Attempts int `json:"attempts"`
	// LastStatus is the HTTP status of the last attempt; 0 when the
	// receiver never answered (refused, timed out) or none was tried.
	LastStatus int `json:"last_status"`
	// DeliveredAt and DeliveredVersion name the newest version of the job
	// a receiver acknowledged with a 2xx; null and 0 until one did.
	DeliveredAt      *Time `json:"delivered_at"`
	DeliveredVersion int64 `json:"delivered_version"`
}

// NewView is the view of j.
func NewView(j job.Job) View {
	v := View{
		ID: j.ID, State: j.State, RequestKey: j.RequestKey, InputHash: j.InputHash,
		Model: j.Model, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		Progress: job.ClampProgress(j.Progress), CostCents: j.Cost, CostEstimated: j.CostEstimated, BudgetCents: j.Budget, Held: max(j.Held, 0),
		ResultModel: j.ResultModel, SavedCents: j.Saved, ResultLane: j.ResultLane, Lanes: j.Lanes, AttemptLanes: j.AttemptLanes,
		CreatedAt: Time{j.CreatedAt}, UpdatedAt: Time{j.UpdatedAt},
		Deadline: Time{j.Deadline}, Version: j.Version,
	}
	if j.ErrorClass != "" && j.State != job.Succeeded {
		c := j.ErrorClass
		v.ErrorClass = &c
	}
	if present(j.Result) {
		v.Result = j.Result
	}
	if r := j.ResultRef; r != nil {
		v.ResultBytes, v.ResultHash = r.Size, r.SHA256
	}
	if present(j.Metadata) {
		v.Metadata = j.Metadata
	}
	if j.Callback.URL != "" {
		d := j.Deliveries
		cb := &CallbackView{URL: j.Callback.URL, Events: j.Callback.Events, Attempts: d.Attempts, LastStatus: d.LastStatus,
			DeliveredVersion: d.DeliveredVersion}
		if len(cb.Events) == 0 {
			cb.Events = job.TerminalEvents
		}
		if !d.DeliveredAt.IsZero() {
			cb.DeliveredAt = &Time{d.DeliveredAt}
		}
		v.Callback = cb
	}
	return v
}

// ResultLinkTTL is how long a link to a large answer works: long enough
// to fetch a few MB on a slow connection, short enough that a link that
// leaked (a log, a forwarded event) soon reads nothing.
const ResultLinkTTL = 15 * time.Minute

// Linked reports whether the view's answer is read by a link (LinkResult)
// rather than inline.
func (v View) Linked() bool { return v.ResultHash != "" }

// LinkResult sets the link to the view's large answer and when it
// expires.
func (v *View) LinkResult(url string, expires time.Time) {
	v.ResultURL, v.ResultExpiresAt = url, &Time{expires}
}

// UnmarshalJSON reads a view; a null result or metadata becomes nil
// (json.RawMessage would otherwise hold the four bytes "null").
func (v *View) UnmarshalJSON(b []byte) error {
	type plain View // no methods: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if !present(p.Result) {
		p.Result = nil
	}
	if !present(p.Metadata) {
		p.Metadata = nil
	}
	*v = View(p)
	return nil
}

// Terminal reports whether the job will never change again on its own.
func (v View) Terminal() bool { return v.State.Terminal() }

// Class is the error class, "" when there is none.
func (v View) Class() job.ErrorClass { return classOf(v.ErrorClass) }

func classOf(c *job.ErrorClass) job.ErrorClass {
	if c == nil {
		return ""
	}
	return *c
}

func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
