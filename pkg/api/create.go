package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// recordTooLarge explains a 413 for a body under the body limit whose
// record is over the store's: the input is stored as JSON, where U+2028
// and U+2029 become 6-byte escapes (docs/errors.md#payload_too_large).
const recordTooLarge = "the job record this body makes would be over the store's 400 KB limit " +
	"(the input is stored as JSON, where U+2028 and U+2029 take 6 bytes each): shorten the input"

// create answers POST /jobs (docs/api.md, "The API"): validate, record,
// enqueue. Nothing is written for an invalid request. A record whose message
// could not be sent stays queued and the caller gets 503 enqueue_failed; the
// caller's retry with the same key finds it queued with no attempts and sends
// again.
func (h *Handler) create(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	b, bad := body(ev)
	if bad != nil {
		return h.clientProblem(ctx, log, "read body", bad)
	}
	if bad := checkContentType(ev); bad != nil {
		return h.clientProblem(ctx, log, "check content type", bad)
	}
	key, _ := header(ev, "Idempotency-Key")
	b, uploaded, err := h.withUpload(ctx, tenant, b)
	if err != nil {
		return h.clientProblem(ctx, log, "read upload", h.namedJob(ctx, tenant, key, err))
	}
	b, resolved, err := h.withUploadParts(ctx, tenant, b)
	if err != nil {
		return h.clientProblem(ctx, log, "read upload part", h.namedJob(ctx, tenant, key, err))
	}
	limit := MaxBodyBytes
	if uploaded || resolved {
		limit = MaxResolvedBytes
	}
	req, err := parseCreate(tenant, key, b, h.limits, limit)
	if err != nil && req.InputHash == "" {
		return h.clientProblem(ctx, log, "parse create", err)
	}
	j := req.NewJob(h.clock.Now(), h.retention.Failed)
	if err != nil {
		// The body is well-formed JSON, but a rule refused it, and most
		// rules are today's configuration (the models offered, the
		// limits): an accepted job's retry is still its repeat.
		return h.refusedUnlessRepeat(ctx, log, j, "parse create", err)
	}
	if req.Callback.URL != "" {
		if bad := h.checkCallback(ctx, req.Callback.URL); bad != nil {
			return h.refusedUnlessRepeat(ctx, log, j, "check callback", bad)
		}
	}
	if bad := h.checkQuarantine(ctx, log, j); bad != nil {
		return h.refusedUnlessRepeat(ctx, log, j, "check quarantine", bad)
	}
	if bad := h.checkRoute(&j, req.Input); bad != nil {
		return h.refusedUnlessRepeat(ctx, log, j, "check route", bad)
	}
	log = log.With(slog.String("job_id", j.ID))
	if wait, bad := h.checkSpend(ctx, log, j); bad != nil {
		return spendLimited(h.refusedUnlessRepeat(ctx, log, j, "check spend", bad), wait)
	}
	if bad := h.enterQueue(ctx, log, j); bad != nil {
		return h.tooManyQueued(h.refusedUnlessRepeat(ctx, log, j, "check queued", bad))
	}
	if err := h.offload(ctx, &j); err != nil {
		h.leaveQueue(ctx, log, j)
		return h.serverProblem(ctx, log, "create", fmt.Errorf("store the input of %s: %w", j.ID, err))
	}

	created, err := h.store.Create(ctx, j)
	if err != nil {
		h.leaveQueue(ctx, log, j)
	}
	if err == nil {
		if err := h.queue.Send(ctx, created.ID, created.Tenant); err != nil {
			return h.enqueueProblem(ctx, log, fmt.Errorf("send new job %s: %w", created.ID, err))
		}
		return h.created(ctx, log, http.StatusAccepted, created)
	}
	switch job.ErrorCode(err) {
	case job.CodeConflict:
	case job.CodeTooLarge:
		// The caller's input, not a failure: the record is refused before
		// any write, so nothing is left behind.
		return h.clientProblem(ctx, log, "create", refuse(wire.CodePayloadTooLarge, "", "%s", recordTooLarge))
	default:
		return h.serverProblem(ctx, log, "create", fmt.Errorf("create job %s: %w", j.ID, err))
	}
	existing, ok := job.ConflictJob(err)
	if !ok {
		return h.serverProblem(ctx, log, "create", fmt.Errorf("create job %s: conflict without the existing record: %w", j.ID, err))
	}
	return h.repeat(ctx, log, j, existing)
}

// repeat answers a create whose id is taken (a repeat: see "Glossary" in
// docs/architecture.md): the same body is the same job (re-sent if it may
// never have been enqueued), another body is a 422. The header keeps the
// name Stripe's API made common for this answer.
func (h *Handler) repeat(ctx context.Context, log *slog.Logger, want, existing job.Job) events.APIGatewayV2HTTPResponse {
	if existing.Tenant != want.Tenant || existing.RequestKey != want.RequestKey {
		err := errors.New("the existing record belongs to another tenant or key")
		return h.serverProblem(ctx, log, "create", fmt.Errorf("id collision on %s: %w", want.ID, err))
	}
	if existing.InputHash != want.InputHash {
		return h.clientProblem(ctx, log, "create", refuse(wire.CodeKeyReused, "Idempotency-Key",
			"this Idempotency-Key was used with a different request body"))
	}
	if existing.State == job.Queued && existing.Attempts == 0 {
		if err := h.queue.Send(ctx, existing.ID, existing.Tenant); err != nil {
			return h.enqueueProblem(ctx, log, fmt.Errorf("re-send job %s: %w", existing.ID, err))
		}
	}
	resp := h.created(ctx, log, http.StatusOK, existing)
	if resp.StatusCode == http.StatusOK {
		resp.Headers["Idempotent-Replayed"] = "true"
	}
	return resp
}

// refusedUnlessRepeat answers a create that a check refused (a limit or
// model of today's configuration, its route, its callback target, its
// quarantined input) or could not check. A retry of a create whose first
// try was recorded is still a repeat whatever changed since: its callback
// host stopped resolving, its input was quarantined by another job's
// failure, its route lost the lanes it allows or got dearer, its model
// left the offer, a limit was lowered. The job exists and runs, so it is
// answered as one (docs/api.md, "Idempotency"). Only a key
// never used gets the refusal; a store that cannot say which it is gets
// 503, so the caller retries rather than gives up on a job that may
// exist. The lookup costs one read, on this path only (an accepted
// create's repeat is found by the conditional put); the checks still
// precede every write.
func (h *Handler) refusedUnlessRepeat(ctx context.Context, log *slog.Logger, want job.Job, op string, bad error) events.APIGatewayV2HTTPResponse {
	existing, err := h.store.Get(ctx, want.ID)
	switch {
	case err == nil:
		return h.repeat(ctx, log, want, existing)
	case job.ErrorCode(err) == job.CodeNotFound:
		return h.clientProblem(ctx, log, op, bad)
	default:
		return h.serverProblem(ctx, log, "create", fmt.Errorf("look for a repeat of %s: %w", want.ID, err))
	}
}

// checkRoute refuses a new job its route cannot serve as configured
// today (no lane it allows, an option a rung refuses, a budget below one
// attempt's worst case) and otherwise sets its Reserve. A route that
// changed since a job was accepted must not refuse that job's repeat, so
// its refusal goes through refusedUnlessRepeat.
func (h *Handler) checkRoute(j *job.Job, in job.Input) error {
	r := h.routes[j.Model]
	if bad := r.CheckOffered(j.Model, j.Lanes); bad != nil {
		return bad
	}
	if bad := r.CheckOptions(j.Model, in, j.Lanes); bad != nil {
		return bad
	}
	j.Reserve = r.Reserve(in, j.Lanes)
	if !job.Covers(j.Budget, j.Reserve) {
		// Not one attempt could start: refuse now rather than record a job
		// that can only be abandoned.
		return invalid("budget_cents",
			"the budget (%s cents) is below the worst case of one attempt of route %q for this input (%s cents): raise budget_cents or lower input.max_tokens",
			j.Budget, j.Model, j.Reserve)
	}
	return nil
}

// checkQuarantine refuses j when its tenant's same input on its route is
// quarantined (docs/quarantine.md, "Quarantine"). A quarantine store
// that does not answer lets the create through: the check saves money, it
// guards nothing, and a job whose input really is bad fails as the first
// did, one attempt later.
func (h *Handler) checkQuarantine(ctx context.Context, log *slog.Logger, j job.Job) error {
	if h.quarantine == nil {
		return nil
	}
	q, ok, err := h.quarantine.Quarantined(ctx, job.QuarantineKey{Tenant: j.Tenant, Model: j.Model, InputHash: j.InputHash}, j.CreatedAt)
	if err != nil {
		log.WarnContext(ctx, "create: the quarantine check failed; the create goes on", slog.String("error", errorText(err)))
		return nil
	}
	if !ok {
		return nil
	}
	return refuse(wire.CodeInputQuarantined, "input",
		"this input failed on route %q with %s in job %s (%s); the same input on that route is refused until %s: change it, or ask an operator to lift the quarantine",
		q.Model, q.Class, q.JobID, q.At.Format(time.RFC3339), q.Until.Format(time.RFC3339))
}

// created answers status with the view and the job's Location.
func (h *Handler) created(ctx context.Context, log *slog.Logger, status int, j job.Job) events.APIGatewayV2HTTPResponse {
	resp, err := h.viewResponse(ctx, status, j)
	if err != nil {
		return h.serverProblem(ctx, log, "create", err)
	}
	resp.Headers["Location"] = "/jobs/" + j.ID
	h.hintPoll(resp, j)
	return resp
}

// checkCallback refuses a callback this deployment may not call: none at
// all when it delivers no callbacks, else a target the policy refuses.
func (h *Handler) checkCallback(ctx context.Context, url string) error {
	if h.callbacks == nil {
		return invalid("callback_url", "this deployment delivers no callbacks")
	}
	err := h.callbacks.Check(ctx, url)
	var refused *webhook.ErrTarget
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return invalid("callback_url", "%s", refused.Reason)
	default:
		return fmt.Errorf("check callback_url: %w", err)
	}
}
