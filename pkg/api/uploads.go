package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

const (
	// InlineInputBytes is the largest input a record keeps inline; a
	// larger one goes to the payload store (docs/payloads.md,
	// "Thresholds": every heartbeat is billed for the whole item).
	InlineInputBytes = 8 << 10
	// MaxUploadBytes is the largest upload POST /uploads grants, and so
	// the largest input a create can name (docs/payloads.md, "Limits"):
	// the API holds the object, its canonical form and the record's copy
	// in memory at once.
	MaxUploadBytes = 32 << 20
	// UploadTTL is how long an upload link works: long enough to send
	// MaxUploadBytes on a slow line, short enough that a leaked link is
	// soon useless.
	UploadTTL = 15 * time.Minute
	// uploadIDBytes is an upload id's randomness: 128 bits, never guessed.
	uploadIDBytes = 16
)

// Payloads is the payload store as the API uses it (pkg/s3's Payloads
// through pkg/app/apirole): the input of a create too large for its
// record, and the uploads a create names. Get answers job.NotFound for a
// key that does not exist and job.CodeTooLarge past limit.
type Payloads interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
	PresignUpload(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (UploadLink, error)
}

// UploadLink is a presigned PUT: what the caller sends, to where, with
// which headers (the signature covers them), until when.
type UploadLink struct {
	Method  string
	URL     string
	Headers http.Header
	Expires time.Time
}

// upload answers POST /uploads: a link that stores exactly size bytes
// of an input, an image or a document under the caller's tenant, which a
// create then names (input_upload, or a part's upload).
func (h *Handler) upload(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	if h.payloads == nil {
		return problemFor(wire.CodeNotFound, "", "this deployment takes no uploads")
	}
	b, bad := body(ev)
	if bad != nil {
		return h.clientProblem(ctx, log, "read body", bad)
	}
	var req wire.UploadRequest
	if err := strictDecode(b, &req); err != nil {
		return h.clientProblem(ctx, log, "parse upload", err)
	}
	limit, ok := uploadLimit(req.ContentType)
	if !ok {
		return h.clientProblem(ctx, log, "parse upload", invalid("content_type",
			"content_type must be application/json (an input), one of %v (an image part) or %v (a document part)", job.ImageTypes, job.DocumentTypes))
	}
	if req.Size < 1 || req.Size > limit {
		return h.clientProblem(ctx, log, "parse upload", invalid("size", "size must be from 1 to %d bytes for %s", limit, req.ContentType))
	}
	id := newUploadID()
	link, err := h.payloads.PresignUpload(ctx, uploadKey(tenant, id), req.ContentType, req.Size, UploadTTL)
	if err != nil {
		return h.serverProblem(ctx, log, "upload", fmt.Errorf("presign upload: %w", err))
	}
	headers := make(map[string]string, len(link.Headers))
	for k, v := range link.Headers {
		headers[k] = strings.Join(v, ",")
	}
	out := wire.Upload{UploadID: id, URL: link.URL, Method: link.Method, Headers: headers, ExpiresAt: wire.Time{Time: link.Expires}}
	b, err = json.Marshal(out)
	if err != nil {
		return h.serverProblem(ctx, log, "upload", fmt.Errorf("encode upload: %w", err))
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusCreated,
		Headers: map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, Body: string(b)}
}

// uploadLimit is the largest upload of contentType granted, false for a
// type no create takes: an input's MaxUploadBytes, an image or a
// document part's own limit, so a file no part may carry is refused
// before it is sent.
func uploadLimit(contentType string) (int64, bool) {
	switch {
	case contentType == "application/json":
		return MaxUploadBytes, true
	case slices.Contains(job.ImageTypes, contentType):
		return job.MaxImageBytes, true
	case slices.Contains(job.DocumentTypes, contentType):
		return job.MaxDocumentBytes, true
	}
	return 0, false
}

// newUploadID is a random upload id, hex so it needs no escaping in a key.
func newUploadID() string {
	b := make([]byte, uploadIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// validUploadID reports whether id has newUploadID's form: anything else
// names no object, and a '/' in it must never reach a key.
func validUploadID(id string) bool {
	if len(id) != 2*uploadIDBytes {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// uploadKey is where tenant's upload id lives: under a digest of the
// tenant, so another tenant naming the id reaches another key, which
// does not exist.
func uploadKey(tenant, id string) string {
	sum := sha256.Sum256([]byte(tenant))
	return "uploads/" + hex.EncodeToString(sum[:16]) + "/" + id
}

// inputKey is where j's input lives: the input hash in the key means a
// reused Idempotency-Key with other input writes another object, never
// over the first job's.
func inputKey(j job.Job) string {
	return "inputs/" + j.ID + "/" + strings.TrimPrefix(j.InputHash, "sha256:")
}

// withUpload is the create body b with its input_upload replaced by the
// uploaded object as input, so the same input inline or uploaded is
// validated, hashed and quarantined alike. A body naming no upload is
// answered unchanged, false.
func (h *Handler) withUpload(ctx context.Context, tenant string, b []byte) ([]byte, bool, error) {
	if !bytes.Contains(b, []byte(`"input_upload"`)) {
		return b, false, nil // no second pass over an inline input
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) != nil || members["input_upload"] == nil {
		return b, false, nil // ParseCreate names what is wrong with it
	}
	if k, dup := duplicateKey(b); dup {
		return nil, false, invalid(Clip(k, 64), "the field %q appears twice in one object", Clip(k, 64))
	}
	var id string
	if json.Unmarshal(members["input_upload"], &id) != nil || !validUploadID(id) {
		return nil, false, invalid("input_upload", "input_upload must be an upload_id that POST /uploads answered")
	}
	if given(members["input"]) {
		return nil, false, invalid("input_upload", "give exactly one of input and input_upload")
	}
	if h.payloads == nil {
		return nil, false, refuse(wire.CodeUploadNotFound, "input_upload", "this deployment takes no uploads")
	}
	obj, err := h.payloads.Get(ctx, uploadKey(tenant, id), MaxUploadBytes)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound:
		return nil, false, refuse(wire.CodeUploadNotFound, "input_upload",
			"no upload %s: it was never sent, has expired, or belongs to another caller", id)
	case job.CodeTooLarge:
		return nil, false, refuse(wire.CodePayloadTooLarge, "input_upload", "the upload is larger than %d bytes", MaxUploadBytes)
	default:
		return nil, false, fmt.Errorf("read upload: %w", err)
	}
	if !json.Valid(obj) {
		return nil, false, invalid("input", "the upload is not valid JSON")
	}
	delete(members, "input_upload")
	members["input"] = obj
	out, err := json.Marshal(members)
	if err != nil {
		return nil, false, fmt.Errorf("rebuild body: %w", err)
	}
	return out, true, nil
}

// offload moves j's input to the payload store when it is over the
// inline threshold, before the record that points at it is written: a
// record never points at an object that is not there. A failed write
// leaves no record, so the caller sees nothing half-written.
func (h *Handler) offload(ctx context.Context, j *job.Job) error {
	if h.payloads == nil || len(j.Input) <= InlineInputBytes {
		return nil
	}
	key := inputKey(*j)
	if err := h.payloads.Put(ctx, key, j.Input, "application/json"); err != nil {
		// Whatever the cause, the caller may retry: the record was not written.
		return &job.Error{Code: job.CodeUnavailable, Message: "the payload store is unavailable", Err: fmt.Errorf("put input: %w", err)}
	}
	ref := job.PayloadOf(key, j.Input)
	j.InputRef, j.Input = &ref, nil
	return nil
}

// namedJob adds to an upload_not_found the job this tenant's key already
// names, if any: a repeat of a create whose upload has since expired
// cannot be told from a reused key (the input hash needs the input), so
// it is refused, but the caller learns where its job is. Any other error,
// or a store that does not answer, is err unchanged.
func (h *Handler) namedJob(ctx context.Context, tenant, key string, err error) error {
	e, ok := refusal(err)
	if !ok || e.Code != wire.CodeUploadNotFound || !wire.ValidKey(key) {
		return err
	}
	j, getErr := h.store.Get(ctx, job.NewID(tenant, key))
	if getErr != nil || j.Tenant != tenant {
		return err
	}
	return refuse(e.Code, e.Field, "%s; this Idempotency-Key already names job %s (GET /jobs/%s)", e.Message, j.ID, j.ID)
}
