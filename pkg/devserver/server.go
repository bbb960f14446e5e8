package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server runs the gateway and the poller together until its context ends,
// the stream poller and the callback queue's poller with them when set
// (the notifier's two event sources), and, as the schedule does in AWS,
// the reconciler's sweep every SweepEvery and the batch lane's collector
// every CollectEvery (never when either is unset).
type Server struct {
	Gateway      *Gateway
	Poller       *Poller
	Streams      *StreamPoller
	Callbacks    *Poller
	Sweep        func(context.Context)
	SweepEvery   time.Duration
	Collect      func(context.Context)
	CollectEvery time.Duration
	Logger       *slog.Logger
}

// Serve answers HTTP on ln and polls the queue (and the stream) until ctx ends, then stops
// accepting requests, cancels in-flight invocations and waits for them.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	hs := &http.Server{Handler: s.Gateway, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Poller.Run(ctx)
	}()
	if s.Streams != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Streams.Run(ctx)
		}()
	}
	if s.Callbacks != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Callbacks.Run(ctx)
		}()
	}
	for _, sc := range []struct {
		run   func(context.Context)
		every time.Duration
	}{{s.Sweep, s.SweepEvery}, {s.Collect, s.CollectEvery}} {
		if sc.run == nil || sc.every <= 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(sc.every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					sc.run(ctx)
				}
			}
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("devserver: serve: %w", err)
	}
	return nil
}
