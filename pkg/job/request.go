package job

import (
	"encoding/json"
	"fmt"
	"time"
)

// Limits are the configured defaults and upper bounds of a create request.
// Every option a caller may set has a bound, so no request can ask for an
// unbounded deadline, budget or number of attempts.
type Limits struct {
	DefaultModel       string
	Models             []string // routes a caller may name
	DefaultDeadline    time.Duration
	MaxDeadline        time.Duration
	DefaultBudget      Nanocents
	MaxBudget          Nanocents
	DefaultMaxAttempts int
	MaxMaxAttempts     int
	DefaultMaxTokens   int
	MaxMaxTokens       int
	MaxMessages        int
	MaxMetadataBytes   int
}

// Message is one chat message of the model input. Its content is a
// string (Content) or an array of parts (Parts, non-nil), text, images
// and documents (content.go); JSON carries either as "content".
type Message struct {
	Role    string        `json:"role"`
	Content string        `json:"content"`
	Parts   []ContentPart `json:"-"`
	// bad is a content that decoded to no valid parts, refused by
	// CheckInput with its path.
	bad *partError
}

// Input is what the model is asked. It is deliberately small and strict:
// unknown fields are refused rather than silently dropped.
type Input struct {
	// Messages are a chat input's; an embedding input has Texts instead
	// (embedding.go), so neither is sent when empty.
	Messages    []Message `json:"messages,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	// Texts and Dimensions make an embedding input (embedding.go).
	Texts      []string `json:"texts,omitempty"`
	Dimensions int      `json:"dimensions,omitempty"`
	// Options are embedded so that their members are the input's own
	// ("input.top_p"), as a caller writes them.
	Options
}

// CreateRequest is a validated create, defaults applied: what a new job is
// made of, whatever transport brought it (the API decodes it from a POST
// /jobs body, pkg/api).
type CreateRequest struct {
	Tenant      string
	RequestKey  string
	InputHash   string
	Model       string
	Input       Input
	InputJSON   json.RawMessage
	Deadline    time.Duration
	Budget      Nanocents
	MaxAttempts int
	Metadata    json.RawMessage
	Callback    Callback
	// Lanes are the lanes the caller allows (nil: any).
	Lanes []Lane
}

func invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// CheckInput holds in to the rules every model input obeys, whoever asks:
// one to MaxMessages messages, each with a role a provider knows and some
// content (a non-empty string, or parts within checkContent's rules);
// max_tokens from 1 to MaxMaxTokens (DefaultMaxTokens when 0); a
// temperature from 0 to 2; the Options within every provider's bounds
// (checkOptions). A refusal is an invalid_request naming the
// field by its path in the input ("input.messages[1].role").
func (l Limits) CheckInput(in *Input) error {
	if in.Texts != nil || in.Dimensions != 0 {
		return checkEmbedding(*in)
	}
	if len(in.Messages) == 0 {
		return invalid("input.messages", "input.messages must hold at least one message")
	}
	if len(in.Messages) > l.MaxMessages {
		return invalid("input.messages", "input.messages holds more than %d messages", l.MaxMessages)
	}
	seen := map[string]int{}
	for i, m := range in.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return invalid(fmt.Sprintf("input.messages[%d].role", i), "role must be system, user or assistant")
		}
		if err := checkContent(i, m, seen); err != nil {
			return err
		}
	}
	if in.MaxTokens == 0 {
		in.MaxTokens = l.DefaultMaxTokens
	}
	if in.MaxTokens < 1 || in.MaxTokens > l.MaxMaxTokens {
		return invalid("input.max_tokens", "max_tokens must be between 1 and %d", l.MaxMaxTokens)
	}
	if in.Temperature != nil && (*in.Temperature < 0 || *in.Temperature > 2) {
		return invalid("input.temperature", "temperature must be between 0 and 2")
	}
	return checkOptions(*in)
}

// NewJob is the record a validated request creates at now. Its expiry
// covers the whole deadline plus retention, so an abandoned-by-everyone
// record still disappears eventually.
func (r CreateRequest) NewJob(now time.Time, retention time.Duration) Job {
	now = Millis(now)
	return Job{
		ID:          NewID(r.Tenant, r.RequestKey),
		Tenant:      r.Tenant,
		RequestKey:  r.RequestKey,
		InputHash:   r.InputHash,
		Model:       r.Model,
		Input:       r.InputJSON,
		Metadata:    r.Metadata,
		Callback:    r.Callback,
		Lanes:       r.Lanes,
		State:       Queued,
		MaxAttempts: r.MaxAttempts,
		Budget:      r.Budget,
		Deadline:    now.Add(r.Deadline),
		Version:     1,
		CreatedAt:   now,
		UpdatedAt:   now,
		ExpiresAt:   now.Add(r.Deadline + retention),
	}
}
