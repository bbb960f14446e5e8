package wire

// Code is the stable code of a problem answer (docs/errors.md#<code>):
// what clients branch on, never the title or detail. The API's codes
// table says which status answers each, and which domain code (job.Code),
// if any, it stands for.
type Code string

const (
	CodeInvalidRequest       Code = "invalid_request"
	CodeUnauthorized         Code = "unauthorized"
	CodeNotFound             Code = "not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeAlreadyFinished      Code = "already_finished"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeKeyReused            Code = "idempotency_key_reused"
	CodeInputQuarantined     Code = "input_quarantined"
	CodeOptionUnsupported    Code = "option_unsupported"
	CodeUploadNotFound       Code = "upload_not_found"
	CodeTooManyQueued        Code = "too_many_queued"
	CodeSpendLimit           Code = "spend_limit"
	CodeKeyVersionMoved      Code = "key_version_moved"
	CodeEnqueueFailed        Code = "enqueue_failed"
	CodeUnavailable          Code = "unavailable"
	CodeInternal             Code = "internal"
)

// Problem is an RFC 9457 problem details object with the stable code and,
// when known, the offending field: the body of every error answer, and
// what pkg/client decodes one into.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   Code   `json:"code"`
	Field  string `json:"field,omitempty"`
}
