package client

import (
	"encoding/json"
	"fmt"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/job"
)

// The wire types are the server's own (pkg/api declares each once and
// answers with it); these names let a caller of the client use them
// without importing the server's package.
type (
	// View is a job as GET /jobs/{id}, Submit and Cancel answer it.
	View = api.View
	// Summary is a job as List answers it: no progress, result, version
	// or updated_at (Get the job for those), and its replays.
	Summary = api.Summary
	// Page is one answer of GET /jobs; NextCursor is "" on the last.
	Page = api.Page
	// CreateRequest is the body of POST /jobs.
	CreateRequest = api.CreateRequest
)

// TimeFormat is how the API writes times (RFC 3339, UTC, milliseconds).
const TimeFormat = api.TimeFormat

// UserPrompt is the input of one user message; maxTokens 0 leaves
// max_tokens to the server's default.
func UserPrompt(prompt string, maxTokens int) json.RawMessage {
	b, err := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: prompt}}, MaxTokens: maxTokens})
	if err != nil { // strings and ints always encode
		panic(fmt.Sprintf("client: encode a prompt: %v", err))
	}
	return b
}
