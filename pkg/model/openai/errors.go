package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// errorBody is the error object of an OpenAI-compatible error response:
// {"error": {"message": "...", "type": "...", "param": ..., "code": "..."}}.
// Only type and code are ever kept: the message may quote the prompt.
type errorBody struct {
	Type string          `json:"type"`
	Code json.RawMessage `json:"code"`
}

func (b errorBody) code() string {
	var s string
	if json.Unmarshal(b.Code, &s) == nil {
		return s
	}
	return strings.Trim(string(b.Code), `"`)
}

// statusError classifies a non-2xx answer to a call in lane by its status
// and error body.
func statusError(status int, body []byte, lane job.Lane) *model.Error {
	var eb struct {
		Error errorBody `json:"error"`
	}
	_ = json.Unmarshal(body, &eb)
	e := bodyError(status, eb.Error)
	if lane == job.Flex && refusedForCapacity(status, e.Class, eb.Error) {
		e.Class = job.CapacityUnavailable
	}
	return e
}

// refusedForCapacity reports whether an answer to a flex call is the flex
// pool's refusal (docs/errors.md, "How each provider's errors become
// classes": a 429 that is neither a rate limit nor a quota, not billed)
// rather than the key's limit: a 429 that names no rate limit.
// A quota or any other class bodyError found stands, and a
// rate_limit_exceeded stays rate_limited, since it is the key's and the
// worker waits on the key for it.
func refusedForCapacity(status int, class job.ErrorClass, b errorBody) bool {
	code, typ := b.code(), b.Type
	return status == http.StatusTooManyRequests && class == job.RateLimited &&
		!strings.Contains(code, "rate_limit") && !strings.Contains(typ, "rate_limit")
}

func bodyError(status int, b errorBody) *model.Error {
	code, typ := b.code(), b.Type
	has := func(s string) bool { return strings.Contains(code, s) || strings.Contains(typ, s) }
	var class job.ErrorClass
	switch {
	case has("insufficient_quota") || has("billing_hard_limit") || has("spend_limit"):
		class = job.QuotaExhausted
	case has("context_length"):
		class = job.ContextLengthExceeded
	case has("content_filter") || has("content_policy"):
		class = job.ContentFiltered
	case status == http.StatusTooManyRequests || has("rate_limit"):
		class = job.RateLimited
	case status == http.StatusServiceUnavailable || status == 529 || has("overloaded"):
		class = job.Overloaded
	case status == http.StatusUnauthorized || status == http.StatusForbidden || has("invalid_api_key") || has("authentication"):
		class = job.Auth
	case status >= 500 || has("server_error"):
		class = job.ProviderError
	case status == 400 || status == 404 || status == 409 || status == 413 || status == 422 || has("invalid_request"):
		class = job.InvalidRequest
	default:
		class = job.Internal
	}
	detail := fmt.Sprintf("http %d", status)
	for _, s := range []string{code, typ} {
		if s != "" && len(s) <= 64 {
			detail += " " + s
		}
	}
	return &model.Error{Class: class, Detail: detail, Err: fmt.Errorf("openai: %s", detail)}
}

// transportError is model.TransportError for this provider; u is billed.
func transportError(ctx context.Context, err error, u model.Usage) *model.Error {
	return model.TransportError(ctx, "openai", err, u)
}
