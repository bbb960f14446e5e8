package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"

	"github.com/aijobs/aijobs/pkg/job"
)

// TransportError classifies a failure to get or read an answer, the same
// way for every provider: the call's own context first (deadline: timeout;
// cancelled: cancelled), then a network timeout, then a connection cut
// mid-answer or one that never worked, both network. u is what the call
// consumed so far and is billed. Detail is "<provider>: <what happened>";
// Err keeps the cause without the URL (a proxy URL may carry credentials).
func TransportError(ctx context.Context, provider string, err error, u Usage) *Error {
	e := &Error{Usage: u}
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Class, e.Detail = job.Timeout, provider+": call deadline"
	case errors.Is(ctx.Err(), context.Canceled):
		e.Class, e.Detail = job.Cancelled, provider+": call cancelled"
	case errors.As(err, &ne) && ne.Timeout():
		e.Class, e.Detail = job.Timeout, provider+": network timeout"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		e.Class, e.Detail = job.Network, provider+": connection cut"
	default:
		e.Class, e.Detail = job.Network, provider+": connection failed"
	}
	e.Err = fmt.Errorf("%s: %w", e.Detail, Redact(err))
	return e
}

// IsTransport reports whether err failed in transit (a cut, a reset, a
// network error) rather than on what the server said.
func IsTransport(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne)
}

// Redact is err without the url.Error around it, which names the URL.
func Redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
