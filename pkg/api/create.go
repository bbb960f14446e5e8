package api

import (
	"context"
	"encoding/base64"
	"mime"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// create answers POST /jobs: validate everything first (nothing is written
// for a bad request), put the record only if its id is new, then enqueue.
func (h *Handler) create(ctx context.Context, log logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	if ct, ok := header(ev, "content-type"); ok && ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return problemFor(job.CodeUnsupportedMediaType, "send the body as application/json", "Content-Type")
		}
	}
	// Length first, before anything is decoded.
	if len(ev.Body) > base64.StdEncoding.EncodedLen(job.MaxBodyBytes) || !ev.IsBase64Encoded && len(ev.Body) > job.MaxBodyBytes {
		return problemFor(job.CodePayloadTooLarge, "the body is larger than 256 KiB", "")
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return problemFor(job.CodeInvalidRequest, "the body is not valid base64", "")
		}
		body = b
	}
	key, _ := header(ev, "idempotency-key")
	req, err := job.ParseCreate(tenant, key, body, h.limits)
	if err != nil {
		return h.fromError(err, log)
	}
	rec := req.NewJob(h.clock.Now(), h.retention.Failed)
	log = log.With("job_id", rec.ID)

	created, err := h.store.Create(ctx, rec)
	if err != nil {
		existing, ok := job.ConflictJob(err)
		if !ok {
			return h.fromError(err, log)
		}
		if existing.InputHash != rec.InputHash {
			return problemFor(job.CodeKeyReused, "", "Idempotency-Key")
		}
		// The same request again. A job still queued with no attempt may
		// have lost its message (a send that failed): send it again; the
		// claim makes a duplicate harmless.
		if existing.State == job.Queued && existing.Attempts == 0 {
			if err := h.queue.Send(ctx, existing.ID); err != nil {
				return h.fromError(&job.Error{Code: job.CodeEnqueueFailed, Err: err}, log)
			}
		}
		resp := viewResponse(http.StatusOK, existing, h.clock.Now())
		resp.Headers["Idempotent-Replayed"] = "true"
		return resp
	}
	if err := h.queue.Send(ctx, created.ID); err != nil {
		return h.fromError(&job.Error{Code: job.CodeEnqueueFailed, Err: err}, log)
	}
	resp := viewResponse(http.StatusAccepted, created, h.clock.Now())
	resp.Headers["Location"] = "/jobs/" + created.ID
	return resp
}
