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
	"github.com/aijobs/aijobs/pkg/wire"
)

// Poll interval bounds for Retry-After on a job that is not yet terminal.
const (
	minPoll = time.Second
	maxPoll = 30 * time.Second
)

// pollAfter is the Retry-After of a job that is not terminal
// (docs/api.md, "Polls"). Before the first of its route's marks
// it has not reached (the median, then the 90th and 99th percentile
// latencies), the time left until that mark, so a poll lands when half,
// then nine in ten, then 99 in 100 of the route's jobs are done; past
// them, or while the route has no marks yet, a quarter of the job's age,
// so patient clients poll less (a job 20 s old says 5, one 4 minutes old
// says 30). At least 1 and at most 30 seconds, whole seconds rounded down.
func pollAfter(age time.Duration, marks []time.Duration) time.Duration {
	age = max(age, 0) // a clock behind the creator's
	d := age / 4
	for _, m := range marks {
		if m > age {
			d = m - age
			break
		}
	}
	return min(max(d.Truncate(time.Second), minPoll), maxPoll)
}

// hintPoll sets the Retry-After of a view of j that is not terminal, and
// learns from one that is.
func (h *Handler) hintPoll(resp events.APIGatewayV2HTTPResponse, j job.Job) {
	if j.State.Terminal() {
		h.latency.observe(j)
		return
	}
	resp.Headers["Retry-After"] = strconv.FormatInt(int64(pollAfter(h.clock.Now().Sub(j.CreatedAt), h.latency.marks(j.Model))/time.Second), 10)
}

// notFound is the one answer for an unknown id and for another tenant's job,
// so a caller can never tell the two apart.
func notFound() events.APIGatewayV2HTTPResponse {
	return problemFor(wire.CodeNotFound, "", "no such job")
}

// get answers GET /jobs/{id}: the view with ETag, Cache-Control and, while
// the job is not terminal, Retry-After; 304 with the same headers and no
// body when If-None-Match matches the ETag.
//
// The record is read with a peek (eventually consistent, half the read
// units: docs/api.md, "Polls"), and again with a strongly
// consistent read only when the peek cannot be the answer: it found no job
// (one created a moment ago may not have reached the replica yet), or it is
// older than a version the caller already holds (its If-None-Match), so a
// client that sends its ETag never sees a job step back.
func (h *Handler) get(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant, id string) events.APIGatewayV2HTTPResponse {
	inm, conditional := header(ev, "If-None-Match")
	j, err := h.store.Peek(ctx, id)
	if job.ErrorCode(err) == job.CodeNotFound || (err == nil && conditional && newerThan(inm, j.Version)) {
		j, err = h.store.Get(ctx, id)
	}
	switch {
	case job.ErrorCode(err) == job.CodeNotFound:
		return notFound()
	case err != nil:
		return h.serverProblem(ctx, log, "get", fmt.Errorf("get job %s: %w", id, err))
	case j.Tenant != tenant:
		return notFound()
	}
	resp, err := h.viewResponse(ctx, http.StatusOK, j)
	if err != nil {
		return h.serverProblem(ctx, log, "get", err)
	}
	h.hintPoll(resp, j)
	if conditional && etagMatches(inm, resp.Headers["ETag"]) {
		resp.StatusCode = http.StatusNotModified
		resp.Body = ""
		delete(resp.Headers, "Content-Type")
	}
	return resp
}

// newerThan reports whether an If-None-Match value names a version above
// v: the caller holds a newer record than the one read.
func newerThan(ifNoneMatch string, v int64) bool {
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), `"`)
		if n, err := strconv.ParseInt(t, 10, 64); err == nil && n > v {
			return true
		}
	}
	return false
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
