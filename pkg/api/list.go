package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// list answers GET /jobs?state=&error_class=&since=&limit=&cursor=: the
// caller's own jobs, newest first. Unknown or repeated parameters are a
// 400, like unknown body fields.
func (h *Handler) list(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	q, bad := parseList(ev.RawQueryString)
	if bad != nil {
		return h.clientProblem(ctx, log, "parse list", bad)
	}
	q.Tenant = tenant
	page, err := h.store.List(ctx, q)
	if err != nil {
		if job.ErrorCode(err) == job.CodeInvalidRequest { // a cursor the store refuses
			return h.clientProblem(ctx, log, "list", err)
		}
		return h.serverProblem(ctx, log, "list", fmt.Errorf("list jobs: %w", err))
	}
	out := wire.Page{Jobs: make([]wire.Summary, 0, len(page.Jobs)), NextCursor: page.Next}
	for _, j := range page.Jobs {
		out.Jobs = append(out.Jobs, wire.NewSummary(j))
	}
	body, err := json.Marshal(out)
	if err != nil {
		return h.serverProblem(ctx, log, "list", fmt.Errorf("encode the list: %w", err))
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}
