package worker

import (
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// verdict is what happened to an attempt, decided before anything is
// written (attempt.decide): which finishing write records it, and what
// that write carries. The attempt's one finish (attempt.finish) turns it
// into the write; nothing else writes an outcome.
type verdict struct {
	write  verdictWrite
	class  job.ErrorClass
	detail string
	wait   time.Duration // a defer's
	fail   failed        // a failed attempt's, for retryOrEnd
	r      climbed       // the climb's, once the call went
	result []byte        // a success's answer, as the record stores it
	// called says the call went: its finish runs on the finish context,
	// after the hold the record has is confirmed.
	called bool
}

// failed is how an attempt failed, for the decision that follows it: its
// class and detail, what its calls cost, and the worst case a next attempt
// would need.
type failed struct {
	class  job.ErrorClass
	detail string
	paid   job.Settlement
	next   job.Nanocents
}

// verdictWrite names the finishing write a verdict asks for.
type verdictWrite int

const (
	verdictEnd      verdictWrite = iota // end the job for good (attempt.end)
	verdictRetry                        // release for a retry, or end (attempt.retryOrEnd)
	verdictDefer                        // hand it back uncounted (attempt.deferFor)
	verdictLost                         // the lease is lost: settle only (attempt.releaseLost)
	verdictSucceed                      // record the answer (attempt.succeed)
	verdictEnlisted                     // nothing: the batch lane holds the job
	verdictDetach                       // the generation runs on detached (attempt.detach)
)

// verdict is what admission's refusal asks the finish to record: an
// attempt whose lease was lost meanwhile releases the job as lost, having
// spent nothing; any other is deferred.
func (r refusal) verdict() verdict {
	if r.lost {
		return verdict{write: verdictLost, class: job.Cancelled}
	}
	return verdict{write: verdictDefer, wait: r.wait, class: r.class, detail: r.detail}
}

// verdictOf is how the climb r ended, why being the cause its calls were
// stopped with, and next the worst case a next attempt would need.
func (a *attempt) verdictOf(r climbed, why error, next job.Nanocents) verdict {
	v := verdict{r: r, called: true}
	if r.enlisted {
		v.write = verdictEnlisted // the batch lane holds the job; its collector settles it
		return v
	}
	if errors.Is(r.err, model.ErrStillRunning) {
		// Whatever stopped the attempt meanwhile, the detach decides: a
		// lease lost refuses it, and the generation is stopped then.
		v.write = verdictDetach
		return v
	}
	if r.err == nil && !errors.Is(why, errLeaseLost) {
		a.log.Info("attempt succeeded", "model", r.rung.Provider+"/"+r.resp.Model, "lane", r.rung.Lane, "rungs", r.tried, "cost_cents", r.paid.Cost.String(),
			"saved_cents", r.paid.Saved.String(),
			"cost_estimated", r.paid.Estimated, "duration_ms", r.took.Milliseconds(),
			"input_tokens", r.resp.Usage.InputTokens, "output_tokens", r.resp.Usage.OutputTokens)
		v.write = verdictSucceed
		v.result, _ = job.EncodeJSON(r.resp.Result())
		return v
	}
	if wait, ok := a.deferrable(r, why); ok {
		v.write, v.wait, v.class, v.detail = verdictDefer, wait, job.RateLimited, "the provider answered 429: its rate limit is spent"
		return v
	}
	if wait, ok := a.outOfCapacity(r, why); ok {
		v.write, v.wait, v.class, v.detail = verdictDefer, wait, job.CapacityUnavailable, "no lane the job allows had capacity"
		return v
	}
	if errors.Is(why, errLeaseLost) {
		a.log.Info("attempt stopped: lease lost or job cancelled", "cost_cents", r.paid.Cost.String(), "duration_ms", r.took.Milliseconds())
		a.meter.count("LeasesLost", nil)
		v.write, v.class = verdictLost, r.class
		if r.err == nil {
			v.class = job.Cancelled // a result that arrived after the lease was lost
		}
		return v
	}
	class, detail := failureOf(r, why)
	a.log.Info("attempt failed", "error_class", class, "rungs", r.tried, "cost_cents", r.paid.Cost.String(),
		"cost_estimated", r.paid.Estimated, "duration_ms", r.took.Milliseconds())
	v.write, v.fail = verdictRetry, failed{class: class, detail: detail, paid: r.paid, next: next}
	return v
}

// deferrable reports whether a climb that ended as r, stopped by why,
// hands its job back uncounted, and for how long (the provider's pause,
// at least a burst): its one call was refused by the rate
// limit of a key with a shared bucket (every keyed provider entry has
// one, limits declared or not), and it paid nothing. A 429 is the limit
// speaking, not the job failing.
func (a *attempt) deferrable(r climbed, why error) (time.Duration, bool) {
	if why == nil && r.err != nil && r.class == job.RateLimited && r.tried == 1 && a.bucketOf(r.rung) != "" &&
		r.paid.IsZero() && !a.holdUnsure {
		return max(pauseOf(r.err), job.Burst), true
	}
	return 0, false
}

// outOfCapacity reports whether a climb that ended on a lane's capacity
// refusal (every lane the job allows refused, or its deadline leaves no
// faster one) hands the job back uncounted (job.Defer), and for how long:
// a backoff, while the job's deadline is beyond it and nothing was paid.
// A refusal is a wait, never a failed attempt (docs/lanes.md,
// "Cost lanes").
func (a *attempt) outOfCapacity(r climbed, why error) (time.Duration, bool) {
	if why != nil || r.err == nil || r.class != job.CapacityUnavailable || !r.paid.IsZero() || a.holdUnsure {
		return 0, false
	}
	// A faster lane whose key's bucket was empty asked for its own wait.
	wait := max(job.Backoff(a.j.Attempts, a.timing.BackoffBase, a.timing.BackoffMax, a.rand()), r.wait)
	return wait, a.clock.Now().Add(wait).Before(a.j.Deadline)
}

// failureOf names what ended a failed climb: why, the cause the call was
// stopped with, wins over the class of the error the call saw (a call cut
// by the route's timeout sees a cancelled context, not a timeout).
func failureOf(r climbed, why error) (job.ErrorClass, string) {
	class, detail := r.class, detailOf(r.err)
	switch {
	case errors.Is(why, errLeaseExpiring):
		class, detail = job.Timeout, "the lease could not be renewed"
	case errors.Is(why, errHeartbeatPanic):
		class, detail = job.Internal, "the heartbeat failed"
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
	return class, detail
}

// detailOf is the error detail a model error carries, cut to 200 bytes.
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
