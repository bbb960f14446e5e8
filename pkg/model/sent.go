package model

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// Sent tells whether a call's request reached the provider in full. Until
// then nothing can have been billed (a refused dial, a DNS or TLS failure,
// a body cut in its middle); from then on the provider may be generating,
// and billing, whatever becomes of the answer. A call whose answer is lost
// is billed an estimate only if its request was sent.
type Sent struct {
	headers atomic.Bool  // the request's headers were written
	wrote   atomic.Int32 // 0: the write was not reported yet; 1: written in full; 2: failed
}

// TraceSent returns ctx carrying a net/http client trace that records into
// the returned Sent whether a request made with ctx was written: every
// client built on net/http's transport reports it, the AWS SDK's included
// (it keeps the caller's context on its HTTP request). The hooks add to any
// trace ctx already carries.
func TraceSent(ctx context.Context) (context.Context, *Sent) {
	s := &Sent{}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { s.headers.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				s.wrote.Store(1)
			} else {
				s.wrote.Store(2)
			}
		},
	}), s
}

// Done reports whether the request was written in full, once the call has
// returned. A write that started (its headers went out) but whose end was
// not reported yet counts as sent: HTTP/2 reports the end of a write from
// its own goroutine, which may run after the call returned, and a lost
// answer must be billed too much rather than nothing. HTTP/1 reports it
// after the body is in the connection's buffer, before the buffer's last
// flush: a flush that then fails also errs on the high side.
func (s *Sent) Done() bool {
	switch s.wrote.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	return s.headers.Load()
}

// Unanswered is Unanswered(r, stream) when the request was sent, else
// nothing: a request that never reached the provider cost nothing.
func (s *Sent) Unanswered(r Request, stream bool) Usage {
	if !s.Done() {
		return Usage{}
	}
	return Unanswered(r, stream)
}
