package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// cancelTries bounds the cancel loop: a refused cancel whose record is not
// terminal can only mean the record changed in between (an operator replay
// reopened it), so the cancel is tried again, a few times at most.
const cancelTries = 3

// cancel answers POST /jobs/{id}/cancel: the job is abandoned with class
// cancelled. Cancelling a job that is already abandoned answers its view
// (idempotent); a succeeded or failed job is 409 already_finished; an
// unknown id or another tenant's job is 404.
func (h *Handler) cancel(ctx context.Context, log *slog.Logger, tenant, id string) events.APIGatewayV2HTTPResponse {
	for range cancelTries {
		now := h.clock.Now()
		j, err := h.store.Cancel(ctx, job.Cancel{
			ID: id, Tenant: tenant, Now: now,
			ExpiresAt: h.retention.ExpiresAt(job.Abandoned, now),
		})
		if err == nil {
			// A cancelled job holds no queued place. One that never
			// started holds one, and so may one its worker has just
			// claimed (attempts 1) to defer: the defer is then refused,
			// and the worker never gives the place back. A leave is
			// idempotent, so a place already given back costs one write.
			h.leaveQueue(ctx, log, j)
			return h.viewOrProblem(ctx, log, j)
		}
		switch job.ErrorCode(err) {
		case job.CodeNotFound:
			return notFound()
		case job.CodeConflict:
		default:
			return h.serverProblem(ctx, log, "cancel", fmt.Errorf("cancel job %s: %w", id, err))
		}
		cur, ok := job.ConflictJob(err)
		switch {
		case !ok:
			return h.serverProblem(ctx, log, "cancel", fmt.Errorf("cancel job %s: conflict without the record: %w", id, err))
		case cur.Tenant != tenant: // a store may carry the record its tenant condition refused
			return notFound()
		case cur.State == job.Abandoned:
			return h.viewOrProblem(ctx, log, cur)
		case cur.State.Terminal():
			return h.clientProblem(ctx, log, "cancel", refuse(wire.CodeAlreadyFinished, "", "the job has already %s", cur.State))
		}
	}
	err := errors.New("the record kept changing")
	return h.serverProblem(ctx, log, "cancel", fmt.Errorf("cancel job %s: %w", id, err))
}

// viewOrProblem answers 200 with the view of j.
func (h *Handler) viewOrProblem(ctx context.Context, log *slog.Logger, j job.Job) events.APIGatewayV2HTTPResponse {
	resp, err := h.viewResponse(ctx, http.StatusOK, j)
	if err != nil {
		return h.serverProblem(ctx, log, "cancel", err)
	}
	return resp
}
