package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// problemTypeBase is where each code is documented; a problem's type is
// this plus the code.
const problemTypeBase = "https://github.com/aijobs/aijobs/blob/main/docs/errors.md#"

// codeInfo is how one code is shown: its status and its title.
type codeInfo struct {
	status int
	title  string
}

// codes is the one table from job.Code to HTTP. A code not in it (Conflict,
// or one added later) is answered as internal.
var codes = map[job.Code]codeInfo{
	job.CodeInvalidRequest:       {http.StatusBadRequest, "Invalid request"},
	job.CodeUnauthorized:         {http.StatusUnauthorized, "Unauthorized"},
	job.CodeNotFound:             {http.StatusNotFound, "Not found"},
	job.CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed"},
	job.CodeAlreadyFinished:      {http.StatusConflict, "Job already finished"},
	job.CodePayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload too large"},
	job.CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	job.CodeKeyReused:            {http.StatusUnprocessableEntity, "Idempotency key reused"},
	job.CodeEnqueueFailed:        {http.StatusServiceUnavailable, "Job not enqueued"},
	job.CodeUnavailable:          {http.StatusServiceUnavailable, "Service unavailable"},
	job.CodeInternal:             {http.StatusInternalServerError, "Internal error"},
}

// problem is an RFC 9457 problem details object with the stable code and,
// when known, the offending field.
type problem struct {
	Type   string   `json:"type"`
	Title  string   `json:"title"`
	Status int      `json:"status"`
	Detail string   `json:"detail,omitempty"`
	Code   job.Code `json:"code"`
	Field  string   `json:"field,omitempty"`
}

// fixedDetail is shown for server-side codes instead of any message, so an
// adapter's wording can never reach a caller.
var fixedDetail = map[job.Code]string{
	job.CodeEnqueueFailed: "the job is recorded but could not be enqueued; retry with the same Idempotency-Key",
	job.CodeUnavailable:   "a dependency is unavailable; retry later",
	job.CodeInternal:      "an internal error occurred; it has been logged",
}

// problemFor is the problem+json response for code. detail must be
// caller-safe; server-side codes always get their fixed detail.
func problemFor(code job.Code, field, detail string) events.APIGatewayV2HTTPResponse {
	info, ok := codes[code]
	if !ok {
		code, info = job.CodeInternal, codes[job.CodeInternal]
	}
	if d, fixed := fixedDetail[code]; fixed {
		detail, field = d, ""
	}
	if detail == "" {
		detail = info.title
	}
	body, err := json.Marshal(problem{
		Type: problemTypeBase + string(code), Title: info.title, Status: info.status,
		Detail: detail, Code: code, Field: field,
	})
	if err != nil { // strings and ints always encode; keep the status regardless
		body = []byte(`{"code":"internal"}`)
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: info.status,
		Headers: map[string]string{
			"Content-Type":  "application/problem+json",
			"Cache-Control": "no-store",
		},
		Body: string(body),
	}
}

// clientProblem answers a caller's mistake reported by package job: its
// code, field and caller-safe message. Anything that is not a client-side
// *job.Error is a server error.
func (h *Handler) clientProblem(ctx context.Context, log *slog.Logger, op string, err error) events.APIGatewayV2HTTPResponse {
	var e *job.Error
	if errors.As(err, &e) {
		if info, ok := codes[e.Code]; ok && info.status < 500 {
			log.LogAttrs(ctx, slog.LevelInfo, "request refused",
				slog.String("code", string(e.Code)), slog.String("field", truncate(e.Field, 100)))
			return problemFor(e.Code, e.Field, e.Message)
		}
	}
	return h.serverProblem(ctx, log, op, err)
}

// serverProblem answers a failed store or queue call: 503 unavailable with
// Retry-After for code Unavailable, 500 internal for anything else. The
// error text goes to the log only.
func (h *Handler) serverProblem(ctx context.Context, log *slog.Logger, op string, err error) events.APIGatewayV2HTTPResponse {
	code := job.ErrorCode(err)
	if code != job.CodeUnavailable {
		code = job.CodeInternal
	}
	log.LogAttrs(ctx, slog.LevelError, op+" failed",
		slog.String("code", string(code)), slog.String("error", errorText(err)))
	resp := problemFor(code, "", "")
	if code == job.CodeUnavailable {
		resp.Headers["Retry-After"] = seconds(h.retryAfter)
	}
	return resp
}

// enqueueProblem answers a create whose record exists but whose message
// was not sent: 503 enqueue_failed with Retry-After, whatever the cause.
func (h *Handler) enqueueProblem(ctx context.Context, log *slog.Logger, err error) events.APIGatewayV2HTTPResponse {
	log.LogAttrs(ctx, slog.LevelError, "enqueue failed",
		slog.String("code", string(job.ErrorCode(err))), slog.String("error", errorText(err)))
	resp := problemFor(job.CodeEnqueueFailed, "", "")
	resp.Headers["Retry-After"] = seconds(h.retryAfter)
	return resp
}

func errorText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return truncate(err.Error(), 1000)
}

// seconds formats d as a Retry-After value: whole seconds, at least one.
func seconds(d time.Duration) string {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}
