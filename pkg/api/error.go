package api

import (
	"errors"
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// Error is a refusal the API answers as a problem of its Code, with a
// caller-safe Message and, when one is to blame, the Field.
type Error struct {
	Code    wire.Code
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// refuse is an *Error with a formatted message.
func refuse(code wire.Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// refusal is err as the API answers it: an *Error as it is, a *job.Error
// under the code that answers its domain code; false for anything else.
func refusal(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var je *job.Error
	if !errors.As(err, &je) {
		return nil, false
	}
	for code, info := range codes {
		if info.domain != "" && info.domain == je.Code {
			return &Error{Code: code, Field: je.Field, Message: je.Message}, true
		}
	}
	return nil, false
}
