package job

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error kind. The API maps codes to HTTP
// statuses in one table; clients branch on the code, never on the message.
type Code string

const (
	CodeInvalidRequest       Code = "invalid_request"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnauthorized         Code = "unauthorized"
	CodeNotFound             Code = "not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeKeyReused            Code = "idempotency_key_reused"
	CodeAlreadyFinished      Code = "already_finished"
	CodeEnqueueFailed        Code = "enqueue_failed"
	CodeUnavailable          Code = "unavailable"
	CodeInternal             Code = "internal"
	CodeConflict             Code = "conflict"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
)

// Error is the one error type that crosses package boundaries. Message is
// safe to show a caller; Field names the offending request field; Job, on a
// Conflict, is the record as the store found it when it refused a transition.
type Error struct {
	Code    Code
	Message string
	Field   string
	Job     *Job
	Err     error // the cause, for logs only; never shown to a caller
}

func (e *Error) Error() string {
	s := string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted, caller-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, Internal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ConflictJob returns the current record carried by a Conflict error.
func ConflictJob(err error) (Job, bool) {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeConflict && e.Job != nil {
		return *e.Job, true
	}
	return Job{}, false
}
