package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestHedgeSendsAnotherPutBesideAStalledOne: the first put never answers;
// the one sent beside it after `after` lands, and hedge returns then,
// not when the first gives up.
func TestHedgeSendsAnotherPutBesideAStalledOne(t *testing.T) {
	var n atomic.Int32
	start := time.Now()
	err := hedge(context.Background(), func() float64 { return 0 }, 20*time.Millisecond, func(ctx context.Context) error {
		if n.Add(1) == 1 {
			<-ctx.Done() // stalled until hedge is done with it
			return ctx.Err()
		}
		return nil
	})
	if err != nil || n.Load() != 2 || time.Since(start) > time.Second {
		t.Fatalf("hedge: %v after %d puts in %s, want the second put's success at once", err, n.Load(), time.Since(start))
	}
}

// TestHedgeRetriesUnavailableAndStopsOnAnythingElse: unavailable answers
// are tried again after a wait; another error ends it; so does ctx.
func TestHedgeRetriesUnavailableAndStopsOnAnythingElse(t *testing.T) {
	unavailable := &job.Error{Code: job.CodeUnavailable}
	var n atomic.Int32
	err := hedge(context.Background(), func() float64 { return 0 }, time.Hour, func(context.Context) error {
		if n.Add(1) < 3 {
			return unavailable
		}
		return nil
	})
	if err != nil || n.Load() != 3 {
		t.Fatalf("hedge: %v after %d puts, want success on the third", err, n.Load())
	}
	denied := errors.New("denied")
	if err := hedge(context.Background(), func() float64 { return 0 }, time.Hour, func(context.Context) error { return denied }); err != denied {
		t.Fatalf("hedge: %v, want the first error that is not unavailable", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := hedge(ctx, func() float64 { return 0 }, 10*time.Millisecond, func(ctx context.Context) error { <-ctx.Done(); return unavailable }); job.ErrorCode(err) != job.CodeUnavailable {
		t.Fatalf("hedge past its context: %v, want unavailable", err)
	}
}
