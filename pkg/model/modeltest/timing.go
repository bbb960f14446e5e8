package modeltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Each delta is reported before the next one is sent (the worker writes
// progress to the record while the answer comes), and a final count below
// the deltas seen never moves progress back.
func liveProgress(t *testing.T, s suite, wi Wire) {
	progressed := make(chan int, len(pieces)+1)
	below := model.Usage{InputTokens: full.InputTokens, OutputTokens: 2}
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		wi.startStream(w)
		wi.StreamStart(w, full.InputTokens)
		for _, p := range pieces {
			wi.Delta(w, p)
			select {
			case <-progressed:
			case <-time.After(5 * time.Second):
				t.Errorf("no progress reported for delta %q while streaming", p)
			}
		}
		wi.StreamEnd(w, &below)
	})
	c := srv.call(wi.Client(t, srv.URL, true, nil), Call{})
	resp, progress, err := s.generate(t, context.Background(), c, func(n int) { progressed <- n })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Usage != below || resp.Output != fullText {
		t.Fatalf("got %+v, want %q billed %+v", resp, fullText, below)
	}
	if got := fmt.Sprint(progress); got != "[1 2 3]" {
		t.Fatalf("progress %s, want [1 2 3]", got)
	}
	s.once(t, c)
}

// A call that gets no answer in time ends as a timeout, whichever clock
// ended it (the call's deadline, the HTTP client's, the transport's), or
// as a cancellation, billed what a lost answer is.
func timeouts(t *testing.T, s suite, wi Wire) {
	tests := []struct {
		name     string
		stream   bool
		deadline time.Duration // on the call's context; 0: none
		cancel   time.Duration // cancel the call's context after this; 0: never
		client   Doer          // nil: the provider's default
		class    job.ErrorClass
		cause    error // what the error must wrap, if anything
	}{
		{name: "call deadline", deadline: 50 * time.Millisecond, class: job.Timeout, cause: context.DeadlineExceeded},
		{name: "call deadline", stream: true, deadline: 50 * time.Millisecond, class: job.Timeout, cause: context.DeadlineExceeded},
		{name: "cancelled", cancel: 50 * time.Millisecond, class: job.Cancelled, cause: context.Canceled},
		{name: "cancelled", stream: true, cancel: 50 * time.Millisecond, class: job.Cancelled, cause: context.Canceled},
		{name: "http client timeout", client: &http.Client{Timeout: 50 * time.Millisecond}, class: job.Timeout},
		{name: "response header timeout", class: job.Timeout,
			client: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s stream=%v", tt.name, tt.stream), func(t *testing.T) {
			srv := serve(t, func(_ http.ResponseWriter, r *http.Request) { stall(r) })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				defer time.AfterFunc(tt.cancel, cancel).Stop()
			}
			if tt.deadline > 0 {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeout(ctx, tt.deadline)
				defer stop()
			}
			c := srv.call(wi.Client(t, srv.URL, tt.stream, tt.client), Call{})
			start := time.Now()
			_, _, err := s.generate(t, ctx, c, nil)
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("the call outlived its timeout by %v", d)
			}
			me := modelError(t, err)
			if me.Class != tt.class || (tt.cause != nil && !errors.Is(err, tt.cause)) {
				t.Fatalf("class %q (%v), want %q wrapping %v", me.Class, err, tt.class, tt.cause)
			}
			if me.Usage != lost(tt.stream) {
				t.Fatalf("billed %+v, want %+v", me.Usage, lost(tt.stream))
			}
			s.once(t, c)
		})
	}
}

// A cancelled stream stops at once, the server sees its client go, and
// what streamed is billed.
func cancelCloses(t *testing.T, s suite, wi Wire) {
	gone := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		wi.startStream(w)
		wi.StreamStart(w, full.InputTokens)
		wi.Delta(w, pieces[0])
		wi.Delta(w, pieces[1])
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
			t.Error("the client kept the stream open after cancelling")
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	c := srv.call(wi.Client(t, srv.URL, true, nil), Call{})
	_, _, err := s.generate(t, ctx, c, func(n int) {
		if n == 2 {
			cancelled = time.Now()
			cancel()
		}
	})
	me := modelError(t, err)
	if me.Class != job.Cancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("class %q (%v), want cancelled", me.Class, err)
	}
	if me.Usage != wi.seen(2) {
		t.Fatalf("billed %+v, want the two deltas received: %+v", me.Usage, wi.seen(2))
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("the server never saw the client go away")
	}
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Fatalf("the stream closed %v after the cancel, want at once", d)
	}
	s.once(t, c)
}
