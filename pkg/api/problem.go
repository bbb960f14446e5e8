package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// problemTypeBase is where each code is documented; a problem's type is
// this plus the code.
const problemTypeBase = "https://github.com/aijobs/aijobs/blob/main/docs/errors.md#"

// codeInfo is how one code is shown (its status and title) and which
// domain code, if any, it answers.
type codeInfo struct {
	status int
	title  string
	domain job.Code
}

// codes is the one table from a code to HTTP. A code not in it (or a
// domain code no row answers: job.CodeConflict, one added later) is
// answered as internal.
var codes = map[wire.Code]codeInfo{
	wire.CodeInvalidRequest:       {http.StatusBadRequest, "Invalid request", job.CodeInvalidRequest},
	wire.CodeUnauthorized:         {http.StatusUnauthorized, "Unauthorized", ""},
	wire.CodeNotFound:             {http.StatusNotFound, "Not found", job.CodeNotFound},
	wire.CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed", ""},
	wire.CodeAlreadyFinished:      {http.StatusConflict, "Job already finished", ""},
	wire.CodePayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload too large", job.CodeTooLarge},
	wire.CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type", ""},
	wire.CodeKeyReused:            {http.StatusUnprocessableEntity, "Idempotency key reused", ""},
	wire.CodeInputQuarantined:     {http.StatusUnprocessableEntity, "Input quarantined", ""},
	wire.CodeOptionUnsupported:    {http.StatusUnprocessableEntity, "Option unsupported", job.CodeUnsupported},
	wire.CodeUploadNotFound:       {http.StatusUnprocessableEntity, "Upload not found", ""},
	wire.CodeKeyVersionMoved:      {http.StatusConflict, "Key version moved", ""},
	wire.CodeTooManyQueued:        {http.StatusTooManyRequests, "Too many jobs queued", ""},
	wire.CodeSpendLimit:           {http.StatusTooManyRequests, "Spend limit reached", ""},
	wire.CodeEnqueueFailed:        {http.StatusServiceUnavailable, "Job not enqueued", ""},
	wire.CodeUnavailable:          {http.StatusServiceUnavailable, "Service unavailable", job.CodeUnavailable},
	wire.CodeInternal:             {http.StatusInternalServerError, "Internal error", job.CodeInternal},
}

// fixedDetail is shown for server-side codes instead of any message, so an
// adapter's wording can never reach a caller.
var fixedDetail = map[wire.Code]string{
	wire.CodeEnqueueFailed: "the job is recorded but could not be enqueued; retry with the same Idempotency-Key",
	wire.CodeUnavailable:   "a dependency is unavailable; retry later",
	wire.CodeInternal:      "an internal error occurred; it has been logged",
}

// problemFor is the problem+json response for code. detail must be
// caller-safe; server-side codes always get their fixed detail.
func problemFor(code wire.Code, field, detail string) events.APIGatewayV2HTTPResponse {
	info, ok := codes[code]
	if !ok {
		code, info = wire.CodeInternal, codes[wire.CodeInternal]
	}
	if d, fixed := fixedDetail[code]; fixed {
		detail, field = d, ""
	}
	if detail == "" {
		detail = info.title
	}
	body, err := json.Marshal(wire.Problem{
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

// clientProblem answers a caller's mistake: an *Error, or a *job.Error a
// client-side code answers, with its field and caller-safe message.
// Anything else is a server error.
func (h *Handler) clientProblem(ctx context.Context, log *slog.Logger, op string, err error) events.APIGatewayV2HTTPResponse {
	if e, ok := refusal(err); ok {
		if info, ok := codes[e.Code]; ok && info.status < 500 {
			log.LogAttrs(ctx, slog.LevelInfo, "request refused",
				slog.String("code", string(e.Code)), slog.String("field", Clip(e.Field, 100)))
			return problemFor(e.Code, e.Field, e.Message)
		}
	}
	return h.serverProblem(ctx, log, op, err)
}

// serverProblem answers a failed store or queue call: 503 unavailable with
// Retry-After for code Unavailable, 500 internal for anything else. The
// error text goes to the log only.
func (h *Handler) serverProblem(ctx context.Context, log *slog.Logger, op string, err error) events.APIGatewayV2HTTPResponse {
	code := wire.CodeInternal
	if job.ErrorCode(err) == job.CodeUnavailable {
		code = wire.CodeUnavailable
	}
	log.LogAttrs(ctx, slog.LevelError, op+" failed",
		slog.String("code", string(code)), slog.String("error", errorText(err)))
	resp := problemFor(code, "", "")
	if code == wire.CodeUnavailable {
		resp.Headers["Retry-After"] = seconds(h.retryAfter)
	}
	return resp
}

// enqueueProblem answers a create whose record exists but whose message
// was not sent: 503 enqueue_failed with Retry-After, whatever the cause.
func (h *Handler) enqueueProblem(ctx context.Context, log *slog.Logger, err error) events.APIGatewayV2HTTPResponse {
	log.LogAttrs(ctx, slog.LevelError, "enqueue failed",
		slog.String("code", string(job.ErrorCode(err))), slog.String("error", errorText(err)))
	resp := problemFor(wire.CodeEnqueueFailed, "", "")
	resp.Headers["Retry-After"] = seconds(h.retryAfter)
	return resp
}

func errorText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return Clip(err.Error(), 1000)
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
