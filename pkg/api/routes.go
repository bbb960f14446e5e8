package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

type logger = *slog.Logger

func asJobError(err error, target **job.Error) bool { return errors.As(err, target) }

// route dispatches on the raw path, since the HTTP API's $default route
// sends every unmatched path here too.
func (h *Handler) route(ctx context.Context, log logger, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	method := ev.RequestContext.HTTP.Method
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "jobs":
		if method != http.MethodPost {
			return notAllowed("POST")
		}
		return h.withTenant(ev, func(tenant string) events.APIGatewayV2HTTPResponse { return h.create(ctx, log, ev, tenant) })
	case len(parts) == 2 && parts[0] == "jobs":
		if method != http.MethodGet {
			return notAllowed("GET")
		}
		return h.withJobID(ev, parts[1], func(tenant, id string) events.APIGatewayV2HTTPResponse { return h.get(ctx, log, ev, tenant, id) })
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "cancel":
		if method != http.MethodPost {
			return notAllowed("POST")
		}
		return h.withJobID(ev, parts[1], func(tenant, id string) events.APIGatewayV2HTTPResponse { return h.cancel(ctx, log, tenant, id) })
	}
	return problemFor(job.CodeNotFound, "no such route", "")
}

func notAllowed(allow string) events.APIGatewayV2HTTPResponse {
	r := problemFor(job.CodeMethodNotAllowed, "this path accepts "+allow+" only", "")
	r.Headers["Allow"] = allow
	return r
}

func (h *Handler) withTenant(ev events.APIGatewayV2HTTPRequest, next func(tenant string) events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	tenant := tenantOf(ev)
	if tenant == "" {
		return problemFor(job.CodeUnauthorized, "", "")
	}
	return next(tenant)
}

// withJobID checks the tenant first (an anonymous caller learns nothing,
// not even that an id is malformed), then the id's shape.
func (h *Handler) withJobID(ev events.APIGatewayV2HTTPRequest, id string, next func(tenant, id string) events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	return h.withTenant(ev, func(tenant string) events.APIGatewayV2HTTPResponse {
		if len(id) > job.IDLength || !job.ValidID(id) {
			return problemFor(job.CodeInvalidRequest, "the job id is malformed", "id")
		}
		return next(tenant, id)
	})
}

// header reads a request header case-insensitively (API Gateway lower-cases
// names, other callers may not).
func header(ev events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	if v, ok := ev.Headers[name]; ok {
		return v, true
	}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}
