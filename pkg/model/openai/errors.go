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
		Error struct {
			errorBody
			// Message is read only to recognise the flex pool's
			// refusal by its documented words, and never kept: it may
			// quote the prompt.
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &eb)
	e := bodyError(status, eb.Error.errorBody)
	if lane == job.Flex && refusedForCapacity(status, e.Class, eb.Error.errorBody, eb.Error.Message) {
		e.Class = job.CapacityUnavailable
	}
	return e
}

// refusedForCapacity reports whether an answer to a flex call is the flex
// pool's refusal: OpenAI's flex processing guide documents it as "429
// Resource Unavailable", not billed. Only that answer is recognised, by
// its code or type (resource_unavailable) or its message's first words;
// any other 429, a bodiless one included, is the key's rate limit and
// keeps its pause (heard): taking a rate limit for a refusal would move
// the job to a dearer lane on the same, still limited, key.
func refusedForCapacity(status int, class job.ErrorClass, b errorBody, message string) bool {
	if status != http.StatusTooManyRequests || class != job.RateLimited {
		return false
	}
	const word = "resource_unavailable"
	return strings.Contains(b.code(), word) || strings.Contains(b.Type, word) ||
		strings.HasPrefix(strings.ToLower(strings.TrimSpace(message)), "resource unavailable")
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
