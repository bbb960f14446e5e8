package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/parking"
)

// finishAt is the attempt's finish at now (a stamp), settling what its
// calls cost (paid, from the climb, with its last call's lane), everything
// it holds, how long it ran, and which attempt it is. Every finishing
// write the attempt makes is built from here.
func (a *attempt) finishAt(paid job.Settlement, now time.Time) finish.Of {
	paid.Held, paid.Ran, paid.Attempt = a.held, now.Sub(a.start), a.j.Attempts
	return finish.Of{Job: a.j, Owner: a.owner, Now: now, Settlement: paid, Retention: a.retention}
}

// record writes o until it lands, is refused, or ctx (the finish context)
// ends, with the heartbeat renewing the lease and the message meanwhile;
// then it stops the heartbeat, so that no renewal moves the message after
// the outcome decided it. The first write the store fails parks o in the
// lot as well, beside the retries (see park): an answer whose write never
// lands is settled from there by the next worker, not generated again.
func (a *attempt) record(ctx context.Context, o finish.Outcome) error {
	var p *parked
	err := retryWrite(ctx, a.rand, func() error {
		_, err := o.Apply(ctx, a.store)
		if job.ErrorCode(err) == job.CodeUnavailable && p == nil && a.lot != nil {
			p = a.park(ctx, o)
		}
		return err
	})
	if p != nil {
		err = p.close(ctx, err, a.log)
	}
	if a.beatsDone != nil {
		a.beatsDone()
	}
	return err
}

// succeed records the answer and what the attempt cost.
func (a *attempt) succeed(ctx context.Context, r climbed) outcome {
	now := a.stamp()
	result, _ := job.EncodeJSON(r.resp.Result())
	err := a.record(ctx, a.finishAt(r.paid, now).Succeed(result, r.rung.Provider+"/"+r.resp.Model, r.rung.Lane))
	if job.ErrorCode(err) == job.CodeTooLarge {
		// The record cannot hold this result: end the job for good,
		// keeping what the call cost, rather than generate it again.
		return a.end(ctx, job.Internal, "the result is too large to store", r.paid)
	}
	if err == nil {
		a.meter.count("JobsSucceeded", nil)
	}
	return a.outcomeOf(err)
}

// releaseLost records what an attempt cost after its lease was lost or the
// job cancelled: the record is no longer ours, so the release is refused,
// which still settles the attempt, and says what became of the job.
func (a *attempt) releaseLost(ctx context.Context, class job.ErrorClass, paid job.Settlement) outcome {
	now := a.stamp()
	err := a.record(ctx, a.finishAt(paid, now).Release(class, "", time.Time{}))
	return a.outcomeOf(err)
}

// outcomeOf turns the answer of a finishing write into what happens to the
// message. A refused finish still recorded the cost (the store guarantees
// it); the message goes if the job is over, and stays otherwise.
func (a *attempt) outcomeOf(err error) outcome {
	if errors.Is(err, errParked) {
		// The message, hidden by the heartbeat until the lease's end,
		// comes back then for the worker that settles the parked outcome.
		a.meter.count("OutcomesParked", nil)
		return outcomeKeep
	}
	switch job.ErrorCode(err) {
	case "":
		return outcomeDelete
	case job.CodeNotFound:
		return outcomeDelete
	case job.CodeConflict:
		cur, _ := job.ConflictJob(err)
		a.log.Info("result discarded: lease lost or job cancelled; cost kept", "state", cur.State)
		if cur.State.Terminal() {
			return outcomeDelete
		}
		return outcomeKeep
	}
	a.log.Error("recording the outcome failed", "err", err)
	return outcomeTrouble
}

// The writes that record an outcome run on a context detached from the
// invocation's cancellation (an attempt that was paid for must be recorded
// even while the invocation is torn down) and last until the finish
// margin before the invocation's deadline: the rest of the invocation is
// theirs, since once the call has answered nothing else is left to do.
// Without a deadline (a test harness) they get finishTimeout. The margin
// leaves room for the hand-off at the receive limit (a quarter of it
// before the deadline) and for Lambda to take the batch's answer; it is at
// most half the Lambda margin, so a call stopped at that margin still
// leaves its outcome a window.
const (
	maxFinishMargin = 2 * time.Second
	finishTimeout   = 5 * time.Second
)

func (t Timing) finishMargin() time.Duration  { return min(maxFinishMargin, t.LambdaMargin/2) }
func (t Timing) handOffMargin() time.Duration { return t.finishMargin() / 4 }

func (a *attempt) finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return detached(ctx, a.timing.finishMargin())
}

// detached is ctx without its cancellation, ending margin before ctx's
// deadline (finishTimeout from now if ctx has none).
func detached(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), dl.Add(-margin))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
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

// end ends the held job for good with class, settling what the attempt's
// calls cost (paid); an end that landed is followed by the rules every
// finisher follows (finish.AfterEnd: the input's quarantine, the count).
func (a *attempt) end(ctx context.Context, class job.ErrorClass, detail string, paid job.Settlement) outcome {
	now := a.stamp()
	err := a.record(ctx, a.finishAt(paid, now).End(class, detail))
	a.log.Info("job ended", "error_class", class, "state", class.FinalState())
	if err == nil {
		a.afterEnd.Ended(ctx, a.j, class, now, a.log)
	}
	return a.outcomeOf(err)
}

// parked is an outcome being parked beside the writes that record it
// (docs/parking.md, "Parked outcomes"). It is parked from the first
// write the store fails, not once the writes give up: by then the lease
// may already be running out (heartbeats fail as the writes do), and a
// worker that found the attempt dead before the outcome was in the lot
// would write it off and generate again. Parking costs S3 requests on the
// failure path only; a write that lands at once parks nothing.
type parked struct {
	lot  parking.Lot
	key  string
	stop context.CancelFunc
	done chan error
}

// park puts o in the lot in the background, hedged (see hedge) until it
// lands, or ctx (the finish context) ends, or close stops it.
func (a *attempt) park(ctx context.Context, o finish.Outcome) *parked {
	pctx, stop := context.WithCancel(ctx)
	p := &parked{lot: a.lot, key: parking.Key(a.j.ID, a.owner), stop: stop, done: make(chan error, 1)}
	go func() {
		p.done <- hedge(pctx, a.rand, a.timing.parkHedge(), func(ctx context.Context) error { return parking.Park(ctx, p.lot, o) })
	}()
	return p
}

// parkHedge is how long a put of a parked outcome may go unanswered before
// another is sent beside it: 2 s, the S3 performance guidelines' advice
// for small objects ("Timeouts and Retries for Latency-Sensitive
// Applications": retry a GET or PUT of an object under 512 KB after 2 s),
// scaled with the heartbeat (a fifth of it) in test and chaos timings.
func (t Timing) parkHedge() time.Duration { return min(2*time.Second, t.Heartbeat/5) }

// maxHedged bounds the puts of one outcome in flight at once.
const maxHedged = 3

// hedge runs put until one try succeeds, one fails with an error other
// than unavailable, or ctx ends. A try unanswered after `after` gets
// another beside it (at most maxHedged at once): the put is idempotent
// (one key, one body), and the outcome it carries is worth more than the
// requests, so a stalled request does not spend the window alone. After a
// failure with nothing else in flight, the next try waits as retryWrite's
// do.
func hedge(ctx context.Context, rnd func() float64, after time.Duration, put func(context.Context) error) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan error, maxHedged) // never more senders alive than this
	inFlight, fails := 0, 0
	var last error
	launch := func() {
		inFlight++
		go func() { results <- put(hctx) }()
	}
	launch()
	hedgeAt := time.NewTicker(after)
	defer hedgeAt.Stop()
	var retry <-chan time.Time
	for {
		select {
		case err := <-results:
			inFlight--
			if err == nil || job.ErrorCode(err) != job.CodeUnavailable {
				return err
			}
			last = err
			if inFlight == 0 {
				retry = time.After(retryWait(fails, rnd))
			}
			fails++
		case <-hedgeAt.C:
			if inFlight > 0 && inFlight < maxHedged {
				launch()
			}
		case <-retry:
			retry = nil
			if inFlight == 0 {
				launch()
			}
		case <-ctx.Done():
			if last == nil {
				last = &job.Error{Code: job.CodeUnavailable, Message: "parking did not finish in time", Err: ctx.Err()}
			}
			return last
		}
	}
}

// errParked is a finish that never landed but whose outcome is in the lot:
// the job is settled from there once this attempt's lease has run out.
var errParked = errors.New("the outcome could not be recorded and is parked")

// close ends the parking once the writes ended with err. A write that
// landed, or was refused (the store settled the cost either way), leaves
// nothing to park: the copy is deleted (the bucket's lifecycle rule
// removes one whose delete fails). A write that never landed answers
// errParked when the outcome is in the lot, and err when it could not be
// parked either: then the answer is lost, and its hold is what the record
// will charge for it (a write-off).
func (p *parked) close(ctx context.Context, err error, log *slog.Logger) error {
	if job.ErrorCode(err) != job.CodeUnavailable {
		p.stop()
		<-p.done
		if derr := p.lot.Delete(ctx, p.key); derr != nil {
			log.Warn("deleting a parked outcome the store has recorded failed; the lot's lifecycle rule removes it", "err", derr)
		}
		return err
	}
	if perr := <-p.done; perr != nil {
		log.Error("recording the outcome failed and parking it failed: the paid answer is lost", "err", err, "park_err", perr)
		return err
	}
	log.Warn("recording the outcome failed; it is parked for the next worker to settle", "err", err, "key", p.key)
	return errParked
}

// finish records how the climb r ended, why being the cause its calls were
// stopped with, and next the worst case a next attempt would need.
func (a *attempt) finish(ctx context.Context, r climbed, why error, next job.Nanocents) outcome {
	if r.enlisted {
		return outcomeDelete // the batch lane holds the job; its collector settles it
	}
	if r.err == nil && !errors.Is(why, errLeaseLost) {
		a.log.Info("attempt succeeded", "model", r.rung.Provider+"/"+r.resp.Model, "lane", r.rung.Lane, "rungs", r.tried, "cost_cents", r.paid.Cost.String(),
			"saved_cents", r.paid.Saved.String(),
			"cost_estimated", r.paid.Estimated, "duration_ms", r.took.Milliseconds(),
			"input_tokens", r.resp.Usage.InputTokens, "output_tokens", r.resp.Usage.OutputTokens)
		return a.succeed(ctx, r)
	}
	if a.deferrable(r, why) {
		return a.deferFor(ctx, max(pauseOf(r.err), job.Burst), job.RateLimited, "the provider answered 429: its rate limit is spent")
	}
	if wait, ok := a.outOfCapacity(r, why); ok {
		return a.deferFor(ctx, wait, job.CapacityUnavailable, "no lane the job allows had capacity")
	}
	if errors.Is(why, errLeaseLost) {
		a.log.Info("attempt stopped: lease lost or job cancelled", "cost_cents", r.paid.Cost.String(), "duration_ms", r.took.Milliseconds())
		a.meter.count("LeasesLost", nil)
		class := r.class
		if r.err == nil {
			class = job.Cancelled // a result that arrived after the lease was lost
		}
		return a.releaseLost(ctx, class, r.paid)
	}
	class, detail := failureOf(r, why)
	a.log.Info("attempt failed", "error_class", class, "rungs", r.tried, "cost_cents", r.paid.Cost.String(),
		"cost_estimated", r.paid.Estimated, "duration_ms", r.took.Milliseconds())
	return a.retryOrEnd(ctx, failed{class: class, detail: detail, paid: r.paid, next: next})
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

// refused records what admission refused (see refusal): an attempt whose
// lease was lost meanwhile releases the job as lost, having spent
// nothing; any other is deferred.
func (a *attempt) refused(ctx context.Context, r refusal) outcome {
	if r.lost {
		return a.releaseLost(ctx, job.Cancelled, job.Settlement{})
	}
	return a.deferFor(ctx, r.wait, r.class, r.detail)
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

// confirmHold reads what the record holds for the attempt when a raise of
// its hold went unanswered (the write may have landed and its answer been
// lost): every cent held on the record while the attempt's lease is on it
// is the attempt's, and a settlement that returned less would leave a
// hold on a finished job for ever. The read is retried like the finishing
// writes; if it never answers, the settlement returns what the attempt
// knows it holds.
func (a *attempt) confirmHold(ctx context.Context) {
	if !a.holdUnsure {
		return
	}
	_ = retryWrite(ctx, a.rand, func() error {
		cur, err := a.store.Get(ctx, a.j.ID)
		if err == nil && cur.LeaseOwner == a.owner && cur.Held > a.held {
			a.log.Info("a raise of the hold whose answer was lost had landed", "held_cents", cur.Held.String())
			a.held = cur.Held
		}
		return err
	})
}
