package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// attempt runs one claimed attempt to a recorded outcome.
func (w *Worker) attempt(ctx context.Context, m events.SQSMessage, j job.Job, owner string, start time.Time, log *slog.Logger) outcome {
	var in job.Input
	if err := json.Unmarshal(j.Input, &in); err != nil {
		return w.stop(ctx, j, owner, job.InvalidRequest, "stored input is not valid", 0, log)
	}
	route, ok := w.cfg.Routes[j.Model]
	if !ok {
		return w.failed(ctx, m, j, owner, job.Internal, "no route for model "+j.Model, 0, 0, log)
	}
	reserve := WorstCase(route.Price, in)
	if j.Remaining() < reserve {
		return w.stop(ctx, j, owner, job.BudgetExhausted, "remaining budget below the attempt's worst case "+reserve.String()+" cents", 0, log)
	}

	limit, cause := route.Timeout, errRouteTimeout
	if left := j.Deadline.Sub(start); left < limit {
		limit, cause = left, errJobDeadline
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - w.cfg.Timing.LambdaMargin; left < limit {
			limit, cause = left, errLambdaDeadline
		}
	}
	leaseCap := start.Add(route.Timeout + w.cfg.Timing.AttemptMargin)

	callCtx, cancelCall := context.WithCancelCause(ctx)
	defer cancelCall(nil)
	timed, cancelTimer := context.WithTimeoutCause(callCtx, limit, cause)
	defer cancelTimer()

	var progress atomic.Uint64
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		w.heartbeat(ctx, timed, m.ReceiptHandle, j.ID, owner, j.LeaseUntil, leaseCap, &progress, cancelCall, log)
	}()

	began := time.Now()
	resp, genErr := route.Provider.Generate(timed, model.Request{
		JobID: j.ID, Model: route.Model, Messages: in.Messages, MaxTokens: in.MaxTokens, Temperature: in.Temperature,
		Progress: func(tokens int) {
			p := math.Min(float64(tokens)/float64(max(in.MaxTokens, 1)), 1)
			progress.Store(math.Float64bits(p))
		},
	})
	why := context.Cause(timed)
	cancelCall(nil)
	hb.Wait() // no heartbeat may move the message after the outcome below
	elapsed := time.Since(began)
	w.cfg.Metrics.Emit("AttemptDuration", float64(elapsed.Milliseconds()), "Milliseconds", nil)

	ctx, cancelWrites := finishContext(ctx)
	defer cancelWrites()
	now := w.stamp(j)
	if genErr == nil && !errors.Is(why, errLeaseLost) {
		cost := resp.Usage.Cost(route.Price)
		result, _ := job.EncodeJSON(resp)
		err := retryWrite(ctx, func() error {
			_, err := w.cfg.Store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: owner, Now: now, Cost: cost,
				Result: result, Model: resp.Model, ExpiresAt: w.cfg.Retention.ExpiresAt(job.Succeeded, now)})
			return err
		})
		log.Info("attempt succeeded", "cost_cents", cost.String(), "duration_ms", elapsed.Milliseconds(),
			"input_tokens", resp.Usage.InputTokens, "output_tokens", resp.Usage.OutputTokens)
		w.spent(cost)
		if job.ErrorCode(err) == job.CodePayloadTooLarge {
			// The record cannot hold this result: end the job for good,
			// keeping what the call cost, rather than generate it again.
			return w.stop(ctx, j, owner, job.Internal, "the result is too large to store", cost, log)
		}
		if err == nil {
			w.count("JobsSucceeded", nil)
		}
		return w.finished(err, log)
	}

	class, usage := model.Classify(genErr)
	if genErr == nil {
		class, usage = job.Cancelled, resp.Usage
	}
	cost := usage.Cost(route.Price)
	detail := detailOf(genErr)
	w.spent(cost)
	switch {
	case errors.Is(why, errLeaseLost):
		// The record is no longer ours: the release is refused, which
		// still adds the cost, and says what became of the job.
		err := retryWrite(ctx, func() error {
			_, err := w.cfg.Store.Release(ctx, job.Release{ID: j.ID, Owner: owner, Now: now, Cost: cost, Class: class})
			return err
		})
		log.Info("attempt stopped: lease lost or job cancelled", "cost_cents", cost.String(), "duration_ms", elapsed.Milliseconds())
		w.count("LeasesLost", nil)
		return w.finished(err, log)
	case errors.Is(why, errLeaseExpiring):
		class, detail = job.Timeout, "the lease could not be renewed"
	case errors.Is(why, errJobDeadline):
		class, detail = job.DeadlineExceeded, "the job's deadline passed during the call"
	case errors.Is(why, errLambdaDeadline):
		class, detail = job.Timeout, "stopped before the function's deadline"
	case errors.Is(why, errRouteTimeout):
		class, detail = job.Timeout, "the model route's timeout passed"
	case class == job.Cancelled:
		// Only a lost lease may cancel a call; any other end of the
		// invocation's context (shutdown) is a timeout, and retried.
		class, detail = job.Timeout, "the invocation ended during the call"
	}
	log.Info("attempt failed", "error_class", class, "cost_cents", cost.String(), "duration_ms", elapsed.Milliseconds())
	return w.failed(ctx, m, j, owner, class, detail, cost, reserve, log)
}

// failed records an attempt that ended with class: released for a retry
// after a backoff, or ended for good (failed or abandoned).
func (w *Worker) failed(ctx context.Context, m events.SQSMessage, j job.Job, owner string, class job.ErrorClass, detail string, cost, reserve job.Nanocents, log *slog.Logger) outcome {
	now := w.stamp(j)
	backoff := job.Backoff(j.Attempts, w.cfg.Timing.BackoffBase, w.cfg.Timing.BackoffMax, w.cfg.Rand())
	d := job.AfterError(j, now, class, cost, backoff, reserve)
	if d.Action == job.Stop {
		return w.stop(ctx, j, owner, d.Class, detail, cost, log)
	}
	err := retryWrite(ctx, func() error {
		_, err := w.cfg.Store.Release(ctx, job.Release{ID: j.ID, Owner: owner, Now: now, Cost: cost, Class: class, Detail: detail, NotBefore: now.Add(d.Delay)})
		return err
	})
	if err != nil {
		return w.finished(err, log)
	}
	if err := w.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, d.Delay); err != nil {
		log.Warn("setting the retry backoff failed; the message returns at its current visibility", "err", err)
	}
	log.Info("job released for retry", "error_class", class, "backoff_ms", d.Delay.Milliseconds())
	w.count("JobsRetried", map[string]string{"ErrorClass": string(class)})
	return outcomeKeep
}

// stop ends a held job for good with class.
func (w *Worker) stop(ctx context.Context, j job.Job, owner string, class job.ErrorClass, detail string, cost job.Nanocents, log *slog.Logger) outcome {
	now := w.stamp(j)
	err := retryWrite(ctx, func() error {
		_, err := w.cfg.Store.End(ctx, job.End{ID: j.ID, Owner: owner, Now: now, Cost: cost, Class: class, Detail: detail,
			ExpiresAt: w.cfg.Retention.ExpiresAt(class.FinalState(), now)})
		return err
	})
	log.Info("job ended", "error_class", class, "state", class.FinalState())
	if err == nil {
		w.ended(class)
	}
	return w.finished(err, log)
}

// heartbeat renews the lease and the message's visibility every interval
// until the call ends, and cancels the call the moment the record says the
// job is no longer ours (cancelled, or taken over after a lost lease).
//
// If renewals keep failing (the store is unavailable), the call is stopped
// before the last lease it holds runs out: past that point another worker
// may claim the job, and two calls would be billed for one job.
func (w *Worker) heartbeat(ctx, call context.Context, receipt, id, owner string, held, leaseCap time.Time, progress *atomic.Uint64, stop context.CancelCauseFunc, log *slog.Logger) {
	t := time.NewTicker(w.cfg.Timing.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-call.Done():
			return
		case <-t.C:
		}
		now := w.cfg.Clock.Now()
		horizon := now.Add(w.cfg.Timing.LeaseTTL)
		if horizon.After(leaseCap) {
			horizon = leaseCap
		}
		if err := w.cfg.Queue.ChangeVisibility(ctx, receipt, horizon.Sub(now)); err != nil {
			log.Warn("heartbeat: extending message visibility failed", "err", err)
		}
		_, err := w.cfg.Store.Heartbeat(ctx, job.Heartbeat{ID: id, Owner: owner, Now: now, LeaseUntil: horizon,
			Progress: math.Float64frombits(progress.Load())})
		switch job.ErrorCode(err) {
		case "":
			held = horizon
		case job.CodeConflict, job.CodeNotFound:
			stop(errLeaseLost)
			return
		default:
			log.Warn("heartbeat: extending the lease failed", "err", err)
			if !now.Add(w.cfg.Timing.Heartbeat).Before(held) {
				stop(errLeaseExpiring)
				return
			}
		}
	}
}

// stamp is the time of a write to a record the worker holds: the clock,
// but never at or before the claim's own updated_at, which a zero-latency
// call can reach within the same millisecond (the store would otherwise
// spend a read and a second write re-stamping it).
func (w *Worker) stamp(j job.Job) time.Time {
	return job.NextUpdate(j.UpdatedAt, w.cfg.Clock.Now())
}

// spent reports money an attempt cost, in cents (metrics need no exactness;
// the record keeps the exact amount).
func (w *Worker) spent(c job.Nanocents) {
	if c > 0 {
		w.cfg.Metrics.Emit("CostCents", float64(c)/float64(job.NanosPerCent), "None", nil)
	}
}

func detailOf(err error) string {
	var me *model.Error
	if errors.As(err, &me) {
		d := me.Detail
		if len(d) > 200 {
			d = d[:200]
		}
		return d
	}
	return ""
}
