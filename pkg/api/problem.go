package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// statuses is the one table from domain codes to HTTP statuses.
var statuses = map[job.Code]int{
	job.CodeInvalidRequest:       http.StatusBadRequest,
	job.CodeUnauthorized:         http.StatusUnauthorized,
	job.CodeNotFound:             http.StatusNotFound,
	job.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	job.CodeAlreadyFinished:      http.StatusConflict,
	job.CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	job.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	job.CodeKeyReused:            http.StatusUnprocessableEntity,
	job.CodeEnqueueFailed:        http.StatusServiceUnavailable,
	job.CodeUnavailable:          http.StatusServiceUnavailable,
	job.CodeInternal:             http.StatusInternalServerError,
}

var titles = map[job.Code]string{
	job.CodeInvalidRequest:       "Invalid request",
	job.CodeUnauthorized:         "Unauthorized",
	job.CodeNotFound:             "Not found",
	job.CodeMethodNotAllowed:     "Method not allowed",
	job.CodeAlreadyFinished:      "Job already finished",
	job.CodePayloadTooLarge:      "Payload too large",
	job.CodeUnsupportedMediaType: "Unsupported media type",
	job.CodeKeyReused:            "Idempotency key reused",
	job.CodeEnqueueFailed:        "Job recorded but not enqueued",
	job.CodeUnavailable:          "Service unavailable",
	job.CodeInternal:             "Internal error",
}

// defaultDetail is shown when an error carries no caller-safe message.
var defaultDetail = map[job.Code]string{
	job.CodeUnauthorized:    "the request carries no tenant identity",
	job.CodeNotFound:        "no such job",
	job.CodeAlreadyFinished: "the job already finished and cannot be cancelled",
	job.CodeKeyReused:       "this Idempotency-Key was used with a different request body",
	job.CodeEnqueueFailed:   "the job was recorded but could not be enqueued; retry with the same Idempotency-Key",
	job.CodeUnavailable:     "a dependency is unavailable; retry later",
	job.CodeInternal:        "an internal error occurred",
}

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	Field  string `json:"field,omitempty"`
}

// problemFor renders a problem+json response for code. Unknown codes are
// internal errors: no code reaches a caller unmapped.
func problemFor(code job.Code, detail, field string) events.APIGatewayV2HTTPResponse {
	status, ok := statuses[code]
	if !ok {
		code, status = job.CodeInternal, http.StatusInternalServerError
	}
	if detail == "" {
		detail = defaultDetail[code]
	}
	b, _ := json.Marshal(problem{
		Type:   "https://github.com/aijobs/aijobs/blob/main/docs/errors.md#" + string(code),
		Title:  titles[code],
		Status: status,
		Detail: detail,
		Code:   string(code),
		Field:  field,
	})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store"},
		Body:       string(b),
	}
}

// fromError renders err as a problem. Only an *job.Error's caller-safe
// message is shown; anything else is logged and answered as internal.
func (h *Handler) fromError(err error, log logger) events.APIGatewayV2HTTPResponse {
	code := job.ErrorCode(err)
	var je *job.Error
	detail, field := "", ""
	if asJobError(err, &je) && code != job.CodeInternal && code != job.CodeUnavailable {
		detail, field = je.Message, je.Field
	}
	if code == job.CodeInternal || code == job.CodeUnavailable || code == job.CodeEnqueueFailed {
		log.Error("request failed", "code", string(code), "err", err)
	}
	resp := problemFor(code, detail, field)
	if code == job.CodeUnavailable || code == job.CodeEnqueueFailed {
		resp.Headers["Retry-After"] = seconds(h.retryAfter)
	}
	return resp
}

func seconds(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	return strconv.Itoa(max(s, 1))
}
