package worker

import (
	"context"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Buckets are the providers' rate-limit buckets every worker shares
// (docs/architecture.md, "Provider rate limits").
type Buckets interface {
	Take(context.Context, job.Take) (job.Taken, error)
	Give(context.Context, job.Give) error
	Raise(context.Context, job.Raise) error
	Learn(context.Context, job.Learn) error
}

// taken is the attempt's last allowed take: its bucket and the limit it
// was priced at, which is what its give must return tokens at.
type taken struct {
	bucket string
	limit  job.RateLimit
}

// bucketOf is the key of the bucket rung's calls take from, "" for none
// (or no buckets at all): every keyed provider entry's, per model for
// OpenAI's (job.RateLimit.Bucket).
func (a *attempt) bucketOf(rung job.Rung) string {
	if a.buckets == nil {
		return ""
	}
	return rung.Limit.Bucket(rung.Provider, rung.Model)
}

// inlineWait is the longest a first rung's take may wait in place for
// its bucket before the job is deferred instead: a wait this short costs
// less held in place than a defer and a redelivery. It leaves half the
// claim's lease (at most 2 s in all), and never eats into the time the
// invocation needs for the whole route and its margins after it: a wait
// that would leave the call to be cut by the function's deadline is a
// defer, not a gamble on a generation the provider bills.
func (a *attempt) inlineWait(ctx context.Context, route job.Route) time.Duration {
	w := min(2*time.Second, a.timing.LeaseTTL/2)
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)-a.timing.LambdaMargin-route.Timeout()-a.timing.AttemptMargin)
	}
	return max(w, 0)
}

// take takes rung's worst case from its provider's bucket before a call,
// waiting in place up to inline. It answers 0 when the call may go, else
// the wait the bucket asks for, and whether it waited in place. A bucket
// that cannot answer lets the call go: an outage of the buckets table
// must not stop every model call, and the provider's own limit still
// answers for itself.
func (a *attempt) take(ctx context.Context, rung job.Rung, in job.Input, inline time.Duration) (time.Duration, bool) {
	key := a.bucketOf(rung)
	if key == "" {
		return 0, false
	}
	waited := false
	for {
		got, err := a.buckets.Take(ctx, job.Take{Provider: key, Limit: rung.Limit, Now: a.clock.Now(), Tokens: rung.WorstTokens(in)})
		switch {
		case err != nil:
			a.log.Warn("the provider's bucket did not answer; calling without a take", "bucket", key, "err", err)
			return 0, waited
		case got.OK:
			a.granted.taken = taken{bucket: key, limit: got.Limit}
			return 0, waited
		case got.Wait > inline || ctx.Err() != nil:
			return got.Wait, waited
		}
		inline -= got.Wait
		waited = true
		select {
		case <-ctx.Done():
		case <-time.After(got.Wait):
		}
	}
}

// renew extends the claim's lease after a wait in place for the bucket,
// before the heartbeat starts: the call begins with a whole lease ahead
// of it, as if claimed now, or a slow store's first renewal could come
// after the lease guard had stopped a call the provider bills. A lease
// lost meanwhile (a cancel) settles the attempt as lost; a store that
// does not answer defers the job, since the call would run on a short
// lease.
func (a *attempt) renew(ctx context.Context) (outcome, bool) {
	now := a.clock.Now()
	j, err := a.store.Heartbeat(ctx, job.Heartbeat{ID: a.j.ID, Owner: a.owner, Now: now, LeaseUntil: now.Add(a.timing.LeaseTTL)})
	switch job.ErrorCode(err) {
	case "":
		a.j.LeaseUntil, a.j.UpdatedAt = j.LeaseUntil, j.UpdatedAt
		return outcomeKeep, true
	case job.CodeConflict:
		return a.releaseLost(ctx, job.Cancelled, job.Settlement{}), false
	}
	a.log.Warn("renewing the lease after waiting for the bucket failed; deferring", "err", err)
	return a.deferFor(ctx, a.timing.LeaseTTL, job.RateLimited, "the lease could not be renewed after waiting for the provider's rate limit"), false
}

// untake tells the bucket how a call on rung went: the tokens its take
// over-took come back (its worst case less what it used), a pause the
// provider asked for stops every worker's takes (a 429 with no word of
// how long pauses for a burst's length), an answer's word of the key's
// limits is learned for every worker, and its word of what is left
// lowers the bucket to it. All of it is best effort: a bucket that misses
// it is only as wrong as a provider's own counting.
func (a *attempt) untake(ctx context.Context, rung job.Rung, in job.Input, resp model.Response, err error) {
	key := a.bucketOf(rung)
	if key == "" {
		return
	}
	class, used := model.Classify(err)
	if err == nil {
		used = resp.Usage
	}
	a.give(ctx, key, rung.WorstTokens(in)-max(used.InputTokens, 0)-max(used.OutputTokens, 0))
	a.learn(ctx, key, rung, resp, err)
	now := a.clock.Now()
	var raise job.Raise
	switch pause := pauseOf(err); {
	case pause > 0 || class == job.RateLimited:
		pause = max(pause, job.Burst)
		a.log.Info("the provider asked to pause its key", "bucket", key, "pause_ms", pause.Milliseconds())
		a.meter.count("ProviderPauses", nil)
		raise = job.Pause(key, now.Add(pause))
	case err == nil && (resp.Left.HasRequests || resp.Left.HasTokens):
		// What is left is counted at the limit the same headers state.
		raise = rung.Limit.Or(resp.Left.Limit).Lower(key, now, known(resp.Left.Requests, resp.Left.HasRequests), known(resp.Left.Tokens, resp.Left.HasTokens))
	default:
		return
	}
	if err := a.buckets.Raise(ctx, raise); err != nil {
		a.log.Warn("raising the provider's bucket failed", "bucket", key, "err", err)
	}
}

// give returns back tokens the attempt's take on bucket key over-took, at
// the limit the take was priced at; nothing when no take was made there.
func (a *attempt) give(ctx context.Context, key string, back int64) {
	t := a.granted.taken
	a.granted.taken = taken{}
	if t.bucket != key || back <= 0 {
		return
	}
	if err := a.buckets.Give(ctx, job.Give{Provider: key, Limit: t.limit, Tokens: back}); err != nil {
		a.log.Warn("giving over-taken tokens back to the provider's bucket failed", "bucket", key, "err", err)
	}
}

// learn records on the bucket what the call taught of the key's limit:
// the limits an answer's headers stated, or, for a provider that states
// none (Bedrock), a step of the limit learned from its throttles: an
// answer grows it, a throttle cuts it (job.Learn). An untake with nothing
// called (a job enlisted or resumed) teaches nothing.
func (a *attempt) learn(ctx context.Context, key string, rung job.Rung, resp model.Response, err error) {
	l := job.Learn{Provider: key, Now: a.clock.Now()}
	class, _ := model.Classify(err)
	switch {
	case err == nil && !resp.Left.Limit.IsZero():
		l.Limit = resp.Left.Limit
	case !rung.Limit.Throttles:
		return
	case err == nil && resp.Usage.InputTokens+resp.Usage.OutputTokens > 0:
		l.Step = job.Grow
	case class == job.RateLimited:
		l.Step = job.Cut
	default:
		return
	}
	if err := a.buckets.Learn(ctx, l); err != nil {
		a.log.Warn("recording what the provider taught of its limit failed", "bucket", key, "err", err)
	}
}

// known is n when has, else -1 (said nothing).
func known(n int64, has bool) int64 {
	if has {
		return n
	}
	return -1
}

// pauseOf is the pause a failed call's answer asked for.
func pauseOf(err error) time.Duration {
	var me *model.Error
	if errors.As(err, &me) {
		return me.Pause
	}
	return 0
}

// deferrable reports whether a climb that ended as r, stopped by why,
// hands its job back uncounted: its one call was refused by the rate
// limit of a key with a shared bucket (every keyed provider entry has
// one, limits declared or not), and it paid nothing. A 429 is the limit
// speaking, not the job failing.
func (a *attempt) deferrable(r climbed, why error) bool {
	return why == nil && r.err != nil && r.class == job.RateLimited && r.tried == 1 && a.bucketOf(r.rung) != "" &&
		r.paid.IsZero() && !a.holdUnsure
}

// outOfCapacity reports whether a climb that ended on a lane's capacity
// refusal (every lane the job allows refused, or its deadline leaves no
// faster one) hands the job back uncounted (job.Defer), and for how long:
// a backoff, while the job's deadline is beyond it and nothing was paid.
// A refusal is a wait, never a failed attempt (docs/architecture.md,
// "Cost lanes").
func (a *attempt) outOfCapacity(r climbed, why error) (time.Duration, bool) {
	if why != nil || r.err == nil || r.class != job.CapacityUnavailable || !r.paid.IsZero() || a.holdUnsure {
		return 0, false
	}
	// A faster lane whose key's bucket was empty asked for its own wait.
	wait := max(job.Backoff(a.j.Attempts, a.timing.BackoffBase, a.timing.BackoffMax, a.rand()), r.wait)
	return wait, a.clock.Now().Add(wait).Before(a.j.Deadline)
}

// deferFor hands the claimed job back to the queue for wait (job.Defer):
// its attempt uncounted, its hold returned, its message hidden until then.
// A defer refused means the lease was lost (or this defer landed and its
// answer was lost): the job is not this attempt's either way.
func (a *attempt) deferFor(ctx context.Context, wait time.Duration, class job.ErrorClass, detail string) outcome {
	ctx, cancel := a.finishContext(ctx)
	defer cancel()
	now := a.stamp()
	d := job.Defer{ID: a.j.ID, Owner: a.owner, Now: now, Held: a.held, Class: class, Detail: detail, NotBefore: now.Add(wait)}
	err := retryWrite(ctx, a.rand, func() error {
		_, err := a.store.Defer(ctx, d)
		return err
	})
	if a.beatsDone != nil {
		// A renewal landing after the hiding below would undo it.
		a.beatsDone()
	}
	switch job.ErrorCode(err) {
	case "":
	case job.CodeConflict:
		a.log.Info("deferring the job was refused: the lease is no longer this attempt's", "err", err)
		return outcomeKeep
	default:
		a.log.Error("deferring the job failed; its lease runs out and its hold is written off", "err", err)
		return outcomeTrouble
	}
	if err := a.queue.ChangeVisibility(ctx, a.m.ReceiptHandle, wait); err != nil {
		a.log.Warn("hiding a deferred job's message failed; it returns at its current visibility", "err", err)
	}
	a.log.Info("job deferred: a wait, not an attempt", "error_class", class, "wait_ms", wait.Milliseconds(), "detail", detail)
	a.meter.count("JobsDeferred", nil)
	return outcomeKeep
}
