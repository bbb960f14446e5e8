package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// errorBody is the error object of an Anthropic error response, and of the
// in-stream error event:
//
//	{"type": "error", "error": {"type": "...", "message": "...",
//	  "details": {"error_code": "..."}}, "request_id": "req_..."}
//
// The message is read to classify (some classes are told apart by it
// alone) but never kept: it may quote the prompt.
type errorBody struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

// code is details.error_code, when the body has one.
func (b errorBody) code() string {
	var d struct {
		ErrorCode string `json:"error_code"`
	}
	if len(b.Details) == 0 || json.Unmarshal(b.Details, &d) != nil {
		return ""
	}
	return d.ErrorCode
}

// Reasons told apart by the message alone; they go into Detail in place
// of the message, so an operator still sees why the class was chosen.
const (
	reasonSpendLimit    = "spend_limit"
	reasonCreditBalance = "credit_balance"
	reasonPromptTooLong = "prompt_too_long"
)

// statusError classifies a non-2xx answer by its status and error body.
func statusError(status int, reqID string, body []byte) *model.Error {
	var eb struct {
		Error     errorBody `json:"error"`
		RequestID string    `json:"request_id"`
	}
	_ = json.Unmarshal(body, &eb)
	if reqID == "" {
		reqID = eb.RequestID
	}
	return bodyError(fmt.Sprintf("http %d", status), status, reqID, eb.Error)
}

// bodyError classifies an error body; detail starts with prefix. An error
// of a type nobody knows after a 2xx (a stream's error event) is the
// server failing mid-answer.
func bodyError(prefix string, status int, reqID string, b errorBody) *model.Error {
	class, reason := classify(status, b)
	if class == job.Internal && status/100 == 2 {
		class = job.ProviderError
	}
	detail := prefix
	for _, s := range []string{b.Type, b.code(), reason, reqID} {
		detail = appendToken(detail, s)
	}
	return &model.Error{Class: class, Detail: detail, Err: fmt.Errorf("anthropic: %s", detail)}
}

// classify maps a status and error body to a class, and names the reason
// when only the message told it.
func classify(status int, b errorBody) (job.ErrorClass, string) {
	msg := strings.ToLower(b.Message)
	switch {
	// Quota first: Anthropic sends spend limits as rate_limit_error (429,
	// the tier's monthly cap) or invalid_request_error (400, a limit the
	// organisation or workspace set), and no retry fixes either.
	case b.Type == "billing_error" || status == http.StatusPaymentRequired || b.code() == "enforced_spend_limit_reached":
		return job.QuotaExhausted, ""
	case strings.Contains(msg, "api usage limits") || strings.Contains(msg, "spend limit"):
		return job.QuotaExhausted, reasonSpendLimit
	case strings.Contains(msg, "credit balance is too low"):
		return job.QuotaExhausted, reasonCreditBalance
	case strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "exceed context limit"):
		return job.ContextLengthExceeded, reasonPromptTooLong
	case b.Type == "rate_limit_error" || status == http.StatusTooManyRequests:
		return job.RateLimited, ""
	case b.Type == "overloaded_error" || status == 529 || status == http.StatusServiceUnavailable:
		return job.Overloaded, ""
	case b.Type == "authentication_error" || b.Type == "permission_error" ||
		status == http.StatusUnauthorized || status == http.StatusForbidden:
		return job.Auth, ""
	case status >= 500 || b.Type == "api_error" || b.Type == "timeout_error":
		return job.ProviderError, ""
	case b.Type == "invalid_request_error" || b.Type == "not_found_error" || b.Type == "request_too_large" ||
		b.Type == "conflict_error" || status == http.StatusBadRequest || status == http.StatusNotFound ||
		status == http.StatusConflict || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return job.InvalidRequest, ""
	}
	return job.Internal, ""
}

// maxDetail bounds Detail: it is a note for operators, not a log line.
const maxDetail = 100

// appendToken appends s to detail when s is a short identifier (an error
// type, a code, a request id) and still fits; anything else is dropped, so
// nothing free-form from the wire ever reaches Detail.
func appendToken(detail, s string) string {
	s = shortToken(s)
	if s == "" || len(detail)+1+len(s) > maxDetail {
		return detail
	}
	return detail + " " + s
}

// shortToken returns s when it looks like an identifier, else "".
func shortToken(s string) string {
	if len(s) > 64 {
		return ""
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return ""
		}
	}
	return s
}

// requestID is the id Anthropic gives every response, for support tickets.
func requestID(h http.Header) string { return shortToken(h.Get("Request-Id")) }

// transportError is model.TransportError for this provider, with the
// request id for support tickets; u is billed.
func transportError(ctx context.Context, err error, reqID string, u model.Usage) *model.Error {
	e := model.TransportError(ctx, "anthropic", err, u)
	e.Detail = appendToken(e.Detail, reqID)
	return e
}
