package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// queueSlot is j's place among its tenant's queued jobs, or false when
// the tenant has no limit. It lasts until j's deadline at the latest: a
// job not started by then is abandoned, and a place whose leave was lost
// frees itself then.
func (h *Handler) queueSlot(j job.Job) (job.Slot, bool) {
	if h.queued == nil || h.queuedMax == nil {
		return job.Slot{}, false
	}
	limit := h.queuedMax(j.Tenant)
	if limit <= 0 {
		return job.Slot{}, false
	}
	return job.Slot{Tenant: j.Tenant, JobID: j.ID, Now: j.CreatedAt, Until: j.Deadline, Limit: limit}, true
}

// enterQueue takes j's place among its tenant's queued jobs before its
// record is written, and answers the refusal when the tenant has its
// limit queued. A slots store that does not answer lets the create
// through, logged: the limit bounds a backlog, it guards no money. Unlike
// the worker's limits it has no local share to fall back to
// (docs/fairness.md, "Tenant fairness"): a place is entered here and
// given back by a worker, so no one process could count its own.
func (h *Handler) enterQueue(ctx context.Context, log *slog.Logger, j job.Job) error {
	sl, ok := h.queueSlot(j)
	if !ok {
		return nil
	}
	entered, err := h.queued.Enter(ctx, sl)
	if err != nil {
		log.WarnContext(ctx, "create: the queued limit did not answer; the create goes on", slog.String("error", errorText(err)))
		return nil
	}
	if entered {
		return nil
	}
	return refuse(wire.CodeTooManyQueued, "",
		"this tenant has %d jobs queued, its limit: retry after some have started", sl.Limit)
}

// leaveQueue gives back j's queued place: one a create took for a record
// it did not write (a repeat's, or a failed write's), or a cancelled
// job's that never started. A lost leave frees itself at the job's
// deadline.
func (h *Handler) leaveQueue(ctx context.Context, log *slog.Logger, j job.Job) {
	sl, ok := h.queueSlot(j)
	if !ok {
		return
	}
	if err := h.queued.Leave(ctx, sl); err != nil {
		log.WarnContext(ctx, "giving back a queued place failed; it frees itself at the deadline", slog.String("error", errorText(err)))
	}
}

// tooManyQueued adds the Retry-After of a create refused for its queued
// limit; any other answer is left as it is. A place frees when a worker
// starts one of the tenant's jobs, which nobody can foretell, so the hint
// is the API's own (settings.EnqueueRetryAfter, 2 s): a refused create
// costs one conditional write and one read, and a bulk submitter that
// honours it keeps its backlog at the limit without holding back when
// the workers drain it fast.
func (h *Handler) tooManyQueued(resp events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	if resp.StatusCode == http.StatusTooManyRequests {
		resp.Headers["Retry-After"] = seconds(h.retryAfter)
	}
	return resp
}
