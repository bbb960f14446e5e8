package client

import (
	"encoding/json"
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// The wire types are the server's own (pkg/wire declares each once, and
// the API answers with it); these names let a caller of the client use
// them without importing a second package.
type (
	// View is a job as GET /jobs/{id}, Submit and Cancel answer it.
	View = wire.View
	// Summary is a job as List answers it: no progress, result, version
	// or updated_at (Get the job for those), and its replays.
	Summary = wire.Summary
	// Page is one answer of GET /jobs; NextCursor is "" on the last.
	Page = wire.Page
	// CreateBody is the body of POST /jobs.
	CreateBody = wire.CreateBody
	// CreateRequest is CreateBody's name before the wire package.
	//
	// Deprecated: use CreateBody; the old name stays for callers that
	// built against it.
	CreateRequest = wire.CreateBody
)

// TimeFormat is how the API writes times (RFC 3339, UTC, milliseconds).
const TimeFormat = wire.TimeFormat

// The input's own types, for a caller that builds one whole (Input) or
// with UserPromptWith.
type (
	// Input is a job's model input: messages, max_tokens, temperature and
	// the Options.
	Input = job.Input
	// Options are the sampling and reasoning options (docs/providers.md,
	// "Sampling and reasoning options"): a route with a rung that cannot
	// honour one refuses the job, 422 option_unsupported.
	Options = job.Options
	// Reasoning is the reasoning option: an effort, a thinking budget, or
	// both.
	Reasoning = job.Reasoning
	// ResponseFormat and JSONSchema ask for an answer a JSON Schema
	// accepts (docs/providers.md, "Structured output"): the result's
	// output is then that JSON, validated by the server.
	ResponseFormat = job.ResponseFormat
	JSONSchema     = job.JSONSchema
)

// UserPrompt is the input of one user message; maxTokens 0 leaves
// max_tokens to the server's default.
func UserPrompt(prompt string, maxTokens int) json.RawMessage {
	return UserPromptWith(prompt, maxTokens, Options{})
}

// UserPromptWith is UserPrompt with the sampling and reasoning options o.
// It panics on a NaN or infinite top_p, which JSON cannot carry.
func UserPromptWith(prompt string, maxTokens int, o Options) json.RawMessage {
	b, err := json.Marshal(Input{Messages: []job.Message{{Role: "user", Content: prompt}}, MaxTokens: maxTokens, Options: o})
	if err != nil { // strings, ints and finite numbers always encode
		panic(fmt.Sprintf("client: encode a prompt: %v", err))
	}
	return b
}
