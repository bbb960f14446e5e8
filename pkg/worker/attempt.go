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

// held is what one claimed attempt carries to its finishing write: who
// holds the job, the budget hold its claim took (returned by the finish),
// and when it started (its run time is added to the record).
type held struct {
	j     job.Job
	owner string
	start time.Time
}

// attempt runs one claimed attempt to a recorded outcome: the route's rungs
// in order, falling back on the classes the route names, under one lease
// that covers them all.
func (w *Worker) attempt(ctx context.Context, m events.SQSMessage, j job.Job, owner string, start time.Time, log *slog.Logger) outcome {
	h := held{j: j, owner: owner, start: start}
	var in job.Input
	if err := json.Unmarshal(j.Input, &in); err != nil {
		return w.stop(ctx, h, job.InvalidRequest, "stored input is not valid", 0, log)
	}
	route, ok := w.cfg.Routes[j.Model]
	if !ok || len(route.Rungs) == 0 {
		return w.failed(ctx, m, h, job.Internal, "no route for model "+j.Model, 0, 0, log)
	}
	// What this attempt may spend: the budget left once its own hold is
	// set aside (the claim checked the record's Reserve; the route's price
	// may have changed since the job was created).
	avail := j.Settled(0)
	first := route.Reserve(in) // the first rung's worst case, at today's prices
	next := max(first, j.Reserve)
	if avail < first {
		return w.stop(ctx, h, job.BudgetExhausted, "remaining budget below the first rung's worst case "+first.String()+" cents", 0, log)
	}

	limit, cause := route.Timeout(), errRouteTimeout
	if left := j.Deadline.Sub(start); left < limit {
		limit, cause = left, errJobDeadline
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - w.cfg.Timing.LambdaMargin; left < limit {
			limit, cause = left, errLambdaDeadline
		}
	}
	leaseCap := start.Add(route.Timeout() + w.cfg.Timing.AttemptMargin)

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
	r := w.climb(timed, route, in, j.ID, avail, &progress, log)
	why := context.Cause(timed)
	cancelCall(nil)
	hb.Wait() // no heartbeat may move the message after the outcome below
	elapsed := time.Since(began)
	w.cfg.Metrics.Emit("AttemptDuration", float64(elapsed.Milliseconds()), "Milliseconds", nil)

	ctx, cancelWrites := finishContext(ctx)
	defer cancelWrites()
	now := w.stamp(j)
	w.spent(r.cost)
	if r.err == nil && !errors.Is(why, errLeaseLost) {
		result, _ := job.EncodeJSON(r.resp)
		produced := r.rung.Provider + "/" + r.resp.Model
		err := retryWrite(ctx, func() error {
			_, err := w.cfg.Store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: owner, Now: now, Cost: r.cost, Held: j.Reserve,
				Ran: now.Sub(start), Result: result, Model: produced, ExpiresAt: w.cfg.Retention.ExpiresAt(job.Succeeded, now)})
			return err
		})
		log.Info("attempt succeeded", "model", produced, "rungs", r.tried, "cost_cents", r.cost.String(), "duration_ms", elapsed.Milliseconds(),
			"input_tokens", r.resp.Usage.InputTokens, "output_tokens", r.resp.Usage.OutputTokens)
		if job.ErrorCode(err) == job.CodePayloadTooLarge {
			// The record cannot hold this result: end the job for good,
			// keeping what the call cost, rather than generate it again.
			return w.stop(ctx, h, job.Internal, "the result is too large to store", r.cost, log)
		}
		if err == nil {
			w.count("JobsSucceeded", nil)
		}
		return w.finished(err, log)
	}

	class, detail := r.class, detailOf(r.err)
	if r.err == nil {
		class = job.Cancelled // a result that arrived after the lease was lost
	}
	switch {
	case errors.Is(why, errLeaseLost):
		// The record is no longer ours: the release is refused, which
		// still settles the attempt, and says what became of the job.
		err := retryWrite(ctx, func() error {
			_, err := w.cfg.Store.Release(ctx, job.Release{ID: j.ID, Owner: owner, Now: now, Cost: r.cost, Held: j.Reserve, Ran: now.Sub(start), Class: class})
			return err
		})
		log.Info("attempt stopped: lease lost or job cancelled", "cost_cents", r.cost.String(), "duration_ms", elapsed.Milliseconds())
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
	log.Info("attempt failed", "error_class", class, "rungs", r.tried, "cost_cents", r.cost.String(), "duration_ms", elapsed.Milliseconds())
	return w.failed(ctx, m, h, class, detail, r.cost, next, log)
}

// climbed is how an attempt's climb down the route ended: the response of
// the rung that answered, or the error and class of the last rung tried,
// and what every rung tried cost together.
type climbed struct {
	resp  model.Response
	err   error
	class job.ErrorClass
	rung  job.Rung
	tried int
	cost  job.Nanocents
}

// climb calls the route's rungs in order until one answers, one fails with
// a class the route does not fall back on, the attempt's own context ends,
// or the next rung's worst case no longer fits in avail.
func (w *Worker) climb(ctx context.Context, route job.Route, in job.Input, id string, avail job.Nanocents, progress *atomic.Uint64, log *slog.Logger) climbed {
	var r climbed
	for i, rung := range route.Rungs {
		if i > 0 {
			if wc := rung.WorstCase(in); r.cost+wc > avail {
				log.Info("no fallback: the next rung's worst case does not fit the budget", "error_class", r.class, "rung", i, "worst_case_cents", wc.String())
				return r
			}
			log.Info("falling back to the next rung", "error_class", r.class, "rung", i, "provider", rung.Provider, "model", rung.Model)
			w.count("Fallbacks", map[string]string{"ErrorClass": string(r.class)})
		}
		r.rung, r.tried = rung, i+1
		progress.Store(0)
		resp, err, timedOut := w.call(ctx, rung, in, id, progress)
		class, usage := model.Classify(err)
		if err == nil {
			usage = resp.Usage
		}
		r.cost += usage.Cost(rung.Price)
		r.resp, r.err, r.class = resp, err, class
		if err == nil || ctx.Err() != nil {
			return r // answered, or the attempt itself is over
		}
		if timedOut {
			r.class = job.Timeout
		}
		if !route.FallsBackOn(r.class) {
			return r
		}
	}
	return r
}

// call runs one rung under its own timeout and reports whether that
// timeout (not the attempt's) ended it.
func (w *Worker) call(ctx context.Context, rung job.Rung, in job.Input, id string, progress *atomic.Uint64) (model.Response, error, bool) {
	p, ok := w.cfg.Providers[rung.Provider]
	if !ok {
		return model.Response{}, model.Errorf(job.Internal, "no provider %q", rung.Provider), false
	}
	rctx, cancel := context.WithTimeoutCause(ctx, rung.Timeout, errRungTimeout)
	defer cancel()
	out := rung.OutputCap(in)
	resp, err := p.Generate(rctx, model.Request{
		JobID: id, Model: rung.Model, Messages: in.Messages, MaxTokens: out, Temperature: in.Temperature,
		Progress: func(tokens int) {
			v := math.Min(float64(tokens)/float64(max(out, 1)), 1)
			progress.Store(math.Float64bits(v))
		},
	})
	if resp.Model == "" {
		resp.Model = rung.Model
	}
	return resp, err, err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), errRungTimeout)
}

// failed records an attempt that ended with class: released for a retry
// after a backoff, or ended for good (failed or abandoned). next is the
// worst case the next attempt would need.
func (w *Worker) failed(ctx context.Context, m events.SQSMessage, h held, class job.ErrorClass, detail string, cost, next job.Nanocents, log *slog.Logger) outcome {
	now := w.stamp(h.j)
	backoff := job.Backoff(h.j.Attempts, w.cfg.Timing.BackoffBase, w.cfg.Timing.BackoffMax, w.cfg.Rand())
	d := job.AfterError(h.j, now, class, cost, backoff, next)
	if d.Action == job.Stop {
		return w.stop(ctx, h, d.Class, detail, cost, log)
	}
	err := retryWrite(ctx, func() error {
		_, err := w.cfg.Store.Release(ctx, job.Release{ID: h.j.ID, Owner: h.owner, Now: now, Cost: cost, Held: h.j.Reserve,
			Ran: now.Sub(h.start), Class: class, Detail: detail, NotBefore: now.Add(d.Delay)})
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
func (w *Worker) stop(ctx context.Context, h held, class job.ErrorClass, detail string, cost job.Nanocents, log *slog.Logger) outcome {
	now := w.stamp(h.j)
	err := retryWrite(ctx, func() error {
		_, err := w.cfg.Store.End(ctx, job.End{ID: h.j.ID, Owner: h.owner, Now: now, Cost: cost, Held: h.j.Reserve, Ran: now.Sub(h.start),
			Class: class, Detail: detail, ExpiresAt: w.cfg.Retention.ExpiresAt(class.FinalState(), now)})
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
