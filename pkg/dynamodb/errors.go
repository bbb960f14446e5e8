package dynamodb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/aijobs/aijobs/pkg/job"
)

// Driver errors end here: callers see a *job.Error whose Message is safe to
// show and names no AWS error; the cause stays in Err, for logs.

// unreadable is an item that does not decode into a job: a bug or a
// hand-edited item, never worth a retry.
func unreadable(err error) error {
	return &job.Error{Code: job.CodeInternal, Message: "a job record could not be read", Err: fmt.Errorf("dynamodb: %w", err)}
}

// unavailable is any other failed call (throttling, network, 5xx after the
// SDK's retries): the caller may retry later. The one exception is an item
// over DynamoDB's 400 KB limit, which no retry can store.
func unavailable(what string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(strings.ToLower(api.ErrorMessage()), "size") {
		return tooLarge(fmt.Errorf("dynamodb: %s: %w", what, err))
	}
	return &job.Error{Code: job.CodeUnavailable, Message: "the job store is unavailable", Err: fmt.Errorf("dynamodb: %s: %w", what, err)}
}

// tooLarge is a record DynamoDB refuses, or would refuse, for its size: a
// domain error of its own (job.CodeTooLarge), because no retry can store
// it; the caller decides what it means (the API: 413, the worker: end the
// job keeping its cost).
func tooLarge(cause error) error {
	return &job.Error{Code: job.CodeTooLarge, Message: "the job record would be larger than the store allows", Err: cause}
}
