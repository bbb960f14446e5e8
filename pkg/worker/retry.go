package worker

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// failed is how an attempt failed, for the decision that follows it: its
// class and detail, what its calls cost, and the worst case a next attempt
// would need.
type failed struct {
	class  job.ErrorClass
	detail string
	paid   job.Settlement
	next   job.Nanocents
}

// retryOrEnd records an attempt that failed as f says: released for a
// retry after a backoff, or ended for good (failed or abandoned), as
// job.AfterError decides.
func (a *attempt) retryOrEnd(ctx context.Context, f failed) outcome {
	now := a.stamp()
	backoff := job.Backoff(a.j.Attempts, a.timing.BackoffBase, a.timing.BackoffMax, a.rand())
	d := job.AfterError(a.j, now, f.class, f.paid.Cost, job.NextAttempt{Backoff: backoff, Reserve: f.next})
	if d.Action == job.Stop {
		return a.end(ctx, d.Class, f.detail, f.paid)
	}
	err := a.record(ctx, a.finishAt(f.paid, now).Release(f.class, f.detail, now.Add(d.Delay)))
	if err != nil {
		return a.outcomeOf(err)
	}
	if err := a.queue.ChangeVisibility(ctx, a.m.ReceiptHandle, d.Delay); err != nil {
		a.log.Warn("setting the retry backoff failed; the message returns at its current visibility", "err", err)
	}
	a.log.Info("job released for retry", "error_class", f.class, "backoff_ms", d.Delay.Milliseconds())
	a.meter.count("JobsRetried", map[string]string{"ErrorClass": string(f.class)})
	return outcomeKeep
}

// retryWrite repeats a finishing write while the store is unavailable,
// until ctx ends: it carries money already spent, and an answer dropped
// is an answer generated (and billed) again. The waits between tries grow
// from writeRetryBase to writeRetryMax, each a random part of that ("full
// jitter"), so the workers a store outage hit together do not come back
// together.
func retryWrite(ctx context.Context, rnd func() float64, write func() error) error {
	var err error
	for i := 0; ; i++ {
		if err = write(); job.ErrorCode(err) != job.CodeUnavailable {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryWait(i, rnd)):
		}
	}
}

// retryWait is the wait after the i-th failed try (from 0): a random part
// of a ceiling that doubles from writeRetryBase to writeRetryMax.
func retryWait(i int, rnd func() float64) time.Duration {
	ceiling := min(writeRetryBase<<min(i, 16), writeRetryMax)
	return time.Duration(float64(ceiling) * (0.1 + 0.9*rnd()))
}

const (
	writeRetryBase = 100 * time.Millisecond
	writeRetryMax  = 2 * time.Second
)
