package job

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error kind. It says what went wrong
// in the domain's terms, never in a transport's: the API maps each code to
// an HTTP status and problem code in its own table (pkg/api), the worker
// and the reconciler branch on it. Callers branch on the code, never on the
// message.
type Code string

const (
	// CodeInvalidRequest is input that breaks a rule; Field names it.
	CodeInvalidRequest Code = "invalid_request"
	// CodeNotFound is a job that does not exist, or another tenant's.
	CodeNotFound Code = "not_found"
	// CodeConflict is a transition the record refused; Job is the record
	// as the store found it.
	CodeConflict Code = "conflict"
	// CodeTooLarge is a record over what the store can hold (DynamoDB's
	// item size): no retry can store it.
	CodeTooLarge Code = "too_large"
	// CodeUnsupported is an input option a route's model refuses (its
	// family's rules, job.Rung.FixedTemperature): sent, the provider would
	// refuse the call; Field names it.
	CodeUnsupported Code = "unsupported"
	// CodeUnavailable is a dependency (the store, the queue) that failed
	// where a later try may succeed.
	CodeUnavailable Code = "unavailable"
	// CodeInternal is anything else: a bug or a corrupt record.
	CodeInternal Code = "internal"
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
