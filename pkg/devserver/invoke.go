package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// invocation is one Lambda invocation of a batch, as both event source
// mappings make it: the handler gets timeout, and the invocation fails
// when the handler returns an error, panics, or has not returned when the
// timeout ends. A timed-out or panicked invocation's context is cancelled
// (Lambda stops the sandbox) and the caller goes on at once; a late
// handler's answer is dropped. A panic in a goroutine the handler started
// is not recoverable here: it ends the dev server, as it ends the sandbox
// in AWS. The emulator cannot kill the handler's other goroutines, so
// unlike AWS they see the cancellation and may still finish their work.
type invocation struct {
	function string        // "worker", "stream": names the function in logs
	failed   string        // what becomes of the batch when it fails
	timeout  time.Duration // the function timeout
	inflight *sync.WaitGroup
	logger   *slog.Logger
}

// invoke runs handler on event and reports whether the invocation
// succeeded; records is the batch's size, for the logs.
func invoke[E, R any](ctx context.Context, in invocation, handler func(context.Context, E) (R, error), event E, records int) (R, bool) {
	type result struct {
		resp     R
		err      error
		panicked any
		stack    string
	}
	var zero R
	ictx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	done := make(chan result, 1) // a late handler's send never blocks
	in.inflight.Add(1)
	go func() {
		defer in.inflight.Done()
		defer func() {
			if v := recover(); v != nil {
				done <- result{panicked: v, stack: string(debug.Stack())}
			}
		}()
		resp, err := handler(ictx, event)
		done <- result{resp: resp, err: err}
	}()
	timer := time.NewTimer(in.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		switch {
		case r.panicked != nil:
			in.logger.Error("poller: "+in.function+" invocation panicked (in AWS the sandbox dies); "+in.failed,
				"panic", fmt.Sprint(r.panicked), "stack", r.stack, "records", records)
			return zero, false
		case r.err != nil:
			in.logger.Error("poller: "+in.function+" invocation failed; "+in.failed, "err", r.err, "records", records)
			return zero, false
		}
		return r.resp, true
	case <-timer.C:
		in.logger.Error("poller: "+in.function+" invocation overran its function timeout; "+in.failed+" and nothing it reports counts",
			"timeout", in.timeout.String(), "records", records)
		return zero, false
	}
}
