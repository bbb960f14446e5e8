package api

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// cancel answers POST /jobs/{id}/cancel. Cancelling twice is fine (200 with
// the abandoned job); cancelling a finished job is a 409. A running attempt
// notices at its next heartbeat.
func (h *Handler) cancel(ctx context.Context, log logger, tenant, id string) events.APIGatewayV2HTTPResponse {
	now := h.clock.Now()
	j, err := h.store.Cancel(ctx, job.Cancel{ID: id, Tenant: tenant, Now: now, ExpiresAt: h.retention.ExpiresAt(job.Abandoned, now)})
	if err == nil {
		return viewResponse(http.StatusOK, j, now)
	}
	cur, ok := job.ConflictJob(err)
	switch {
	case !ok:
		return h.fromError(err, log)
	case cur.Tenant != tenant:
		return problemFor(job.CodeNotFound, "", "")
	case cur.State == job.Abandoned:
		return viewResponse(http.StatusOK, cur, now)
	}
	return problemFor(job.CodeAlreadyFinished, "the job already "+string(cur.State)+"; it cannot be cancelled", "")
}
