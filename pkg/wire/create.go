package wire

import (
	"encoding/json"

	"github.com/aijobs/aijobs/pkg/job"
)

// MaxKeyLength bounds the Idempotency-Key header.
const MaxKeyLength = 255

// ValidKey reports whether k is an acceptable Idempotency-Key: 1..255
// printable ASCII characters. The client checks it before sending, the
// API on receipt, so both refuse the same keys.
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// CreateBody is the body of POST /jobs (docs/openapi.yaml's CreateRequest),
// as pkg/client sends it; what the API makes of it after its checks is a
// job.CreateRequest. Only Input is required; a zero option is left out,
// so the server's configured default applies. The API reads a body member
// by member (api.ParseCreate) rather than into this type, because a typed
// decode cannot tell an empty model from none, takes a member named in
// another case, and names no bounds when a number does not fit.
type CreateBody struct {
	// Model names a route the server knows; "" means its default.
	Model string `json:"model,omitempty"`
	// Input is the model input: {"messages": [...], "max_tokens": N},
	// with temperature and the sampling and reasoning options (top_p,
	// stop, seed, reasoning; job.Input) and a response_format (a JSON
	// Schema the answer must follow); client.UserPrompt builds the
	// common case, client.UserPromptWith one with options. Exactly one
	// of Input and InputUpload is given.
	Input json.RawMessage `json:"input,omitempty"`
	// InputUpload names an upload (POST /uploads) whose object is the
	// input, for one larger than a create body carries (docs/payloads.md).
	InputUpload string `json:"input_upload,omitempty"`
	// DeadlineSeconds is how long the job may take, from its creation.
	DeadlineSeconds int `json:"deadline_seconds,omitempty"`
	// BudgetCents bounds what all attempts together may cost.
	BudgetCents job.Nanocents `json:"budget_cents,omitempty"`
	// MaxAttempts bounds the claims the job may get.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Metadata is any JSON object, returned as given.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// CallbackURL is where aijobs POSTs the job's view when it reaches a
	// state of CallbackEvents (docs/webhooks.md): https, on a public
	// address.
	CallbackURL string `json:"callback_url,omitempty"`
	// CallbackEvents are the states delivered: any of running, succeeded,
	// failed, abandoned; the terminal three when empty.
	CallbackEvents []job.State `json:"callback_events,omitempty"`
	// Lanes are the lanes the job may be served in (docs/lanes.md,
	// "Cost lanes"): any of batch, flex, standard, priority; any the route
	// offers when empty. Ask for one by naming it alone, forbid one by
	// leaving it out.
	Lanes []job.Lane `json:"lanes,omitempty"`
}
