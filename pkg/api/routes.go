package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// endpoint is one of the API's paths: which operation each method it takes
// is, and the job id its path names, if any. HEAD is not supported.
type endpoint struct {
	ops map[string]string // method -> "create", "list", "get", "cancel", "upload", "webhook_key", "rotate_webhook_key", "spend" or "quote"
	id  string
}

// allow is the Allow header of the endpoint: its methods, sorted.
func (e endpoint) allow() string {
	ms := make([]string, 0, len(e.ops))
	for m := range e.ops {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

// match finds the endpoint of a raw path. Ids are taken as they appear in
// the path: a valid id never needs escaping, so one with "%" is refused as
// malformed. An HTTP API has already percent-decoded rawPath (a request for
// /jobs/ID%2Fcancel arrives as /jobs/ID/cancel, pkg/devserver emulates
// it), so what is matched here is the decoded path.
func match(path string) (endpoint, bool) {
	switch path {
	case "/webhook-key":
		return endpoint{ops: map[string]string{http.MethodGet: "webhook_key"}}, true
	case "/webhook-key/rotate":
		return endpoint{ops: map[string]string{http.MethodPost: "rotate_webhook_key"}}, true
	case "/spend":
		return endpoint{ops: map[string]string{http.MethodGet: "spend"}}, true
	case "/uploads":
		return endpoint{ops: map[string]string{http.MethodPost: "upload"}}, true
	case "/quotes":
		return endpoint{ops: map[string]string{http.MethodPost: "quote"}}, true
	}
	rest, ok := strings.CutPrefix(path, "/jobs")
	switch {
	case !ok:
		return endpoint{}, false
	case rest == "":
		return endpoint{ops: map[string]string{http.MethodPost: "create", http.MethodGet: "list"}}, true
	case rest[0] != '/':
		return endpoint{}, false
	}
	id, tail, nested := strings.Cut(rest[1:], "/")
	switch {
	case id == "":
		return endpoint{}, false
	case !nested:
		return endpoint{ops: map[string]string{http.MethodGet: "get"}, id: id}, true
	case tail == "cancel":
		return endpoint{ops: map[string]string{http.MethodPost: "cancel"}, id: id}, true
	}
	return endpoint{}, false
}

// matchEvent matches the event's raw path, and failing that the path without
// a leading "/<stage>" (HTTP APIs include a named stage in rawPath unless a
// custom domain mapping removes it).
func matchEvent(ev events.APIGatewayV2HTTPRequest) (endpoint, bool) {
	if ep, ok := match(ev.RawPath); ok {
		return ep, true
	}
	stage := ev.RequestContext.Stage
	if stage == "" || stage == "$default" {
		return endpoint{}, false
	}
	if rest, ok := strings.CutPrefix(ev.RawPath, "/"+stage); ok && strings.HasPrefix(rest, "/") {
		return match(rest)
	}
	return endpoint{}, false
}

// route answers 404 for an unknown path, 405 for a known path with another
// method, 401 without a usable tenant, and otherwise hands the request on.
func (h *Handler) route(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	ep, ok := matchEvent(ev)
	if !ok {
		return problemFor(wire.CodeNotFound, "", "no such route: the API serves POST /jobs, GET /jobs, GET /jobs/{id}, POST /jobs/{id}/cancel, POST /uploads, GET /webhook-key, POST /webhook-key/rotate, GET /spend and POST /quotes")
	}
	op, ok := ep.ops[ev.RequestContext.HTTP.Method]
	if !ok {
		resp := problemFor(wire.CodeMethodNotAllowed, "", "this path accepts only "+ep.allow())
		resp.Headers["Allow"] = ep.allow()
		return resp
	}
	tenant := tenantOf(ev.RequestContext)
	switch {
	case tenant == "":
		return problemFor(wire.CodeUnauthorized, "", "the request carries no caller identity")
	case len(tenant) > maxTenantBytes:
		return problemFor(wire.CodeUnauthorized, "", fmt.Sprintf("the caller identity is too long (over %d bytes)", maxTenantBytes))
	case !displayable(tenant):
		return problemFor(wire.CodeUnauthorized, "", "the caller identity holds control or invisible formatting characters, or is not UTF-8")
	}
	log = log.With(slog.String("route", op))
	if ep.id != "" {
		if len(ep.id) > job.IDLength || !job.ValidID(ep.id) {
			return problemFor(wire.CodeInvalidRequest, "id", "the id in the path is not a job id")
		}
		log = log.With(slog.String("job_id", ep.id))
	}
	switch op {
	case "create":
		return h.create(ctx, log, ev, tenant)
	case "list":
		return h.list(ctx, log, ev, tenant)
	case "get":
		return h.get(ctx, log, ev, tenant, ep.id)
	case "webhook_key":
		return h.webhookKey(ctx, log, tenant)
	case "rotate_webhook_key":
		return h.rotateWebhookKey(ctx, log, ev, tenant)
	case "spend":
		return h.spendView(ctx, log, tenant)
	case "quote":
		return h.quote(ctx, log, ev, tenant)
	case "upload":
		return h.upload(ctx, log, ev, tenant)
	default:
		return h.cancel(ctx, log, tenant, ep.id)
	}
}
