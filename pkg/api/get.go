package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// get answers GET /jobs/{id}, with ETag/304 and a Retry-After for pollers.
func (h *Handler) get(ctx context.Context, log logger, ev events.APIGatewayV2HTTPRequest, tenant, id string) events.APIGatewayV2HTTPResponse {
	j, err := h.store.Get(ctx, id)
	if err != nil {
		return h.fromError(err, log)
	}
	if j.Tenant != tenant {
		return problemFor(job.CodeNotFound, "", "") // indistinguishable from an unknown id
	}
	now := h.clock.Now()
	if inm, ok := header(ev, "if-none-match"); ok && etagMatches(inm, j.Version) {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotModified, Headers: cacheHeaders(j, now)}
	}
	return viewResponse(http.StatusOK, j, now)
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// etagMatches implements If-None-Match's weak comparison: "*", a list, and
// W/ forms all match.
func etagMatches(header string, version int64) bool {
	want := etag(version)
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == want {
			return true
		}
	}
	return false
}

// retryAfter tells a poller when to come back: clamp(age/4, 1s, 30s), so a
// young job is polled often and an old one rarely. Finished jobs get none.
func retryAfter(j job.Job, now time.Time) time.Duration {
	d := now.Sub(j.CreatedAt) / 4
	return min(max(d, time.Second), 30*time.Second)
}

func cacheHeaders(j job.Job, now time.Time) map[string]string {
	h := map[string]string{"ETag": etag(j.Version), "Cache-Control": "no-store"}
	if !j.State.Terminal() {
		h["Retry-After"] = strconv.Itoa(int(retryAfter(j, now) / time.Second))
	}
	return h
}
