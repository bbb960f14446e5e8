package worker

import (
	"context"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Buckets are the providers' rate-limit buckets every worker shares
// (docs/ratelimits.md, "Provider rate limits").
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
	here   bool // taken from the worker's share (share.take), not the shared bucket
	part   int  // the part of the shared bucket it came from (job.Taken.Part)
}

// bucketOf is the key of the bucket rung's calls take from, "" for none
// (or no buckets at all): every keyed provider entry's, per model for
// OpenAI's (job.RateLimit.Bucket).
func (l limits) bucketOf(rung job.Rung) string {
	if l.buckets == nil {
		return ""
	}
	return rung.Limit.Bucket(rung.Provider, rung.Model)
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
	part := a.admission.taken.part // the give forgets the take
	a.admission.give(ctx, key, rung.WorstTokens(in)-max(used.InputTokens, 0)-max(used.OutputTokens, 0))
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
		raise.Part = part
	default:
		return
	}
	if err := a.buckets.Raise(ctx, raise); err != nil {
		a.log.Warn("raising the provider's bucket failed; raising the local share of it", "bucket", key, "err", err)
		a.share.raise(raise)
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
	a.share.learn(l) // for a local take while the shared bucket does not answer
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
