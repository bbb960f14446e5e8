package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// Poll interval bounds for Retry-After on a job that is not yet terminal.
const (
	minPoll = time.Second
	maxPoll = 30 * time.Second
)

// pollAfter is the Retry-After of a job that is not terminal, growing with
// its age so that patient clients poll less: a quarter of the age, at least
// 1 and at most 30 seconds (a job 20 s old says 5, one 4 minutes old says
// 30). Whole seconds, rounded down.
func pollAfter(age time.Duration) time.Duration {
	d := (age / 4).Truncate(time.Second)
	return min(max(d, minPoll), maxPoll)
}

// notFound is the one answer for an unknown id and for another tenant's job,
// so a caller can never tell the two apart.
func notFound() events.APIGatewayV2HTTPResponse {
	return problemFor(CodeNotFound, "", "no such job")
}

// get answers GET /jobs/{id}: the view with ETag, Cache-Control and, while
// the job is not terminal, Retry-After; 304 with the same headers and no
// body when If-None-Match matches the ETag.
func (h *Handler) get(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant, id string) events.APIGatewayV2HTTPResponse {
	j, err := h.store.Get(ctx, id)
	switch {
	case job.ErrorCode(err) == job.CodeNotFound:
		return notFound()
	case err != nil:
		return h.serverProblem(ctx, log, "get", fmt.Errorf("get job %s: %w", id, err))
	case j.Tenant != tenant:
		return notFound()
	}
	resp, err := viewResponse(http.StatusOK, j)
	if err != nil {
		return h.serverProblem(ctx, log, "get", err)
	}
	if !j.State.Terminal() {
		age := h.clock.Now().Sub(j.CreatedAt)
		resp.Headers["Retry-After"] = strconv.FormatInt(int64(pollAfter(age)/time.Second), 10)
	}
	if inm, ok := header(ev, "If-None-Match"); ok && etagMatches(inm, resp.Headers["ETag"]) {
		resp.StatusCode = http.StatusNotModified
		resp.Body = ""
		delete(resp.Headers, "Content-Type")
	}
	return resp
}

// etagMatches reports whether an If-None-Match value matches tag: "*", or
// any entry of a comma-separated list, compared weakly (a W/ prefix on
// either side is ignored, RFC 9110 13.1.2).
func etagMatches(ifNoneMatch, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}
