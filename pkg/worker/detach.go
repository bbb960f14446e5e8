package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// A detached rung's attempt (docs/resume.md, "Detached routes") starts its
// generation, records it (Await), and ends its invocation (detach): a
// delayed message brings the job back, and the claim path reattaches it
// (reattach: job.Reattach, the same attempt under a new owner) for one look
// (look). Done, it finishes as any attempt does; still running, it
// detaches again, each wait half as long as the generation has run so
// far, from detachFirst up to detachMax: a generation is reattached at
// most half its run late (a run's tail), in a number of reattaches that
// grows with the log of its length.
const (
	detachFirst = time.Second
	detachMax   = time.Minute
	// lookTimeout bounds a reattach's one look at its generation (and at
	// most half the lease, which no heartbeat renews meanwhile): a read,
	// not a wait.
	lookTimeout = 10 * time.Second
)

// lookFor is how long one look at a generation may take: lookTimeout,
// within half the lease the reattach took.
func (a *attempt) lookFor() time.Duration {
	return min(lookTimeout, a.timing.LeaseTTL/2)
}

// abandoner is a provider that can stop a generation it keeps by id
// without a call waiting for it (OpenAI's cancel endpoint). It must not
// need ctx alive: it is sent for attempts whose context has ended.
type abandoner interface {
	Abandon(ctx context.Context, id string)
}

// reattachWait is how long the attempt's generation p runs on detached
// from now: half as long as it has run so far, between
// detachFirst and detachMax, and never past the job's deadline or the
// rung's timeout, when the reattach stops it.
func (a *attempt) reattachWait(p job.Pending, rung job.Rung, now time.Time) time.Duration {
	// Whole seconds: SQS delays a message by whole seconds.
	w := min(max((now.Sub(p.Since)/2).Truncate(time.Second), detachFirst), detachMax)
	end := a.j.Deadline
	if rung.Timeout > 0 && p.Since.Add(rung.Timeout).Before(end) {
		end = p.Since.Add(rung.Timeout)
	}
	return max(min(w, end.Sub(now)), 0)
}

// detach lets the climb r's generation run on with no worker waiting
// (job.Detach) and hands the job to a delayed message, deleting this one:
// the invocation ends while the provider generates. The attempt's slot
// among its tenant's jobs in flight is left when run returns, as for any
// attempt: the slot shares out workers, and a detached job holds none. Its
// bucket take stays taken: the generation was taken for when it started.
// A detach refused (the job cancelled, the lease lost) stops the
// generation, which nobody would reattach.
func (a *attempt) detach(ctx context.Context, r climbed) outcome {
	if a.beatsDone != nil {
		a.beatsDone() // a renewal after the detach would cut its lease short
	}
	if a.pending == nil {
		// Unreachable by call's design (it waits for a generation not on
		// the record); stop it rather than leave it unowned.
		return a.releaseLost(ctx, job.Internal, a.stopDetached(ctx, r.rung, job.Pending{ID: a.started}, r.paid))
	}
	p := *a.pending
	now := a.stamp()
	wait := a.reattachWait(p, r.rung, now)
	// Due by the clock, not the stamp (which may be a millisecond ahead of
	// it): the delayed message must not find its reattach not yet due.
	p.Due = job.Millis(a.clock.Now().Add(wait))
	d := job.Detach{ID: a.j.ID, Owner: a.owner, Now: now, LeaseUntil: p.Due.Add(a.timing.LeaseTTL), Pending: p}
	err := retryWrite(ctx, a.rand, func() error {
		_, err := a.store.Detach(ctx, d)
		return err
	})
	switch job.ErrorCode(err) {
	case "":
	case job.CodeConflict:
		a.log.Info("detaching was refused: the job was cancelled or its lease lost; stopping the generation")
		return a.releaseLost(ctx, job.Cancelled, a.stopDetached(ctx, r.rung, p, r.paid))
	default:
		// The record still holds the generation attached: when the lease
		// runs out, the attempt is written off and the next one resumes it.
		a.log.Error("detaching failed; the generation is resumed once the lease runs out", "err", err)
		return outcomeTrouble
	}
	a.meter.count("JobsDetached", nil)
	a.log.Info("job detached: its generation runs on with no worker waiting", "wait_ms", wait.Milliseconds(), "generation", p.ID)
	if err := a.queue.SendAfter(ctx, a.j.ID, a.j.Tenant, min(wait, 15*time.Minute)); err != nil {
		// This message then comes back in its place.
		if err := a.queue.ChangeVisibility(ctx, a.m.ReceiptHandle, wait); err != nil {
			a.log.Warn("hiding a detached job's message failed; it returns at its current visibility", "err", err)
		}
		return outcomeKeep
	}
	return outcomeDelete
}

// stopDetached stops the detached generation p of rung (nobody will
// reattach it) and answers the attempt's settlement: paid, what its
// earlier rungs cost, and what the generation made (stopped).
func (a *attempt) stopDetached(ctx context.Context, rung job.Rung, p job.Pending, paid job.Settlement) job.Settlement {
	r := climbed{paid: paid}
	u, _, _ := a.stopped(ctx, rung, p)
	r.pay(u, rung)
	return r.paid
}

// stopped stops the detached generation p of rung and reads it once more:
// what it made (a cancelled response states it), else its worst case as
// an estimate; and, with a nil error, the answer it had ended with before
// the stop landed (a read that came late, not a generation that ran long).
func (a *attempt) stopped(ctx context.Context, rung job.Rung, p job.Pending) (model.Usage, model.Response, error) {
	var in job.Input
	_ = json.Unmarshal(a.j.Input, &in) // the claim's record: it was read before the call
	req := model.RequestFor(a.j.ID, rung, in)
	prov := a.providers[rung.Provider]
	if s, ok := prov.(abandoner); ok && p.ID != "" {
		s.Abandon(ctx, p.ID)
	}
	u := model.Unanswered(req, false)
	if prov == nil || p.ID == "" {
		return u, model.Response{}, errNothingToRead
	}
	lctx, cancel := context.WithTimeout(ctx, a.lookFor())
	defer cancel()
	req.Resume, req.Peek = p.ID, true
	resp, err := prov.Generate(lctx, req)
	if _, used := model.Classify(err); err == nil {
		u = resp.Usage
	} else if used != (model.Usage{}) {
		u = used
	}
	return u, resp, err
}

// errNothingToRead is a stopped generation with no provider or id to read
// it by.
var errNothingToRead = errors.New("the stopped generation cannot be read")

// reattach takes back a detached job whose reattach is due (job.Reattach:
// the same attempt, uncounted, under a new owner) and looks at its
// generation once. A reattach refused because another worker took the job
// first is a duplicate delivery: it costs this round trip, and the
// message goes (the winner's own message carries the job on); refused
// otherwise, the message decides again.
func (w *Worker) reattach(ctx context.Context, m message, cur job.Job, now time.Time) (outcome, bool) {
	owner := w.cfg.NewOwner()
	re := job.NewReattach(cur, owner, now, now.Add(w.timing.LeaseTTL))
	j, err := w.store.Reattach(ctx, re)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound:
		return outcomeDelete, false
	case job.CodeConflict:
		got, _ := job.ConflictJob(err)
		if got.LeaseOwner != owner {
			// Another reattach holds the job, or took it and already
			// finished it, its hold settled: this message is the
			// duplicate.
			if got.State.Terminal() && got.LeaseOwner == "" || got.LeaseOwner != re.Of && got.LeaseLive(now) {
				m.log.Info("duplicate reattach absorbed: another worker reattached the detached job")
				w.meter.count("DuplicatesAbsorbed", nil)
				return outcomeDelete, false
			}
			return outcomeKeep, true
		}
		j = got // our own reattach landed, its answer lost
	default:
		m.log.Error("reattaching a detached job failed", "err", err)
		return outcomeTrouble, false
	}
	a := w.newAttempt(m, j, owner, now)
	a.held = j.Held // the detached attempt's whole hold, now this owner's
	m.log.Info("reattaching a detached generation", "attempt", j.Attempts)
	w.meter.count("JobsReattached", nil)
	return a.runReattached(ctx), false
}

// runReattached looks at the reattached attempt's generation and records what
// it found, as run does for a claimed attempt; it enters no slot and
// takes nothing (the generation's take was made when it started).
func (a *attempt) runReattached(ctx context.Context) outcome {
	defer a.stopBeats()
	return a.finish(ctx, a.look(ctx))
}

// look reads the reattached attempt's generation once: done, it is the
// attempt's answer or failure, priced as the attempt's own call; still
// running (or the read ran out of its time), it detaches again; a job
// cancelled meanwhile, or a generation past its rung's timeout or the
// job's deadline, stops it (an answer it had ended with by then is still
// the attempt's). A generation the provider no longer has was still made,
// and is billed its worst case (as a call that made one and lost it is),
// then retried; one whose end states no usage is stopped and billed what
// one more read tells, else its worst case.
func (a *attempt) look(ctx context.Context) verdict {
	p := *a.j.Pending
	r := climbed{paid: job.Settlement{Cost: p.Paid, Estimated: p.Estimated}, tried: 1}
	var in job.Input
	route, ok := a.routes[a.j.Model]
	rung, laned := job.Rung{}, false
	if i := route.RungOf(p.Provider, p.Model); ok && i >= 0 {
		rung, laned = route.Rungs[i].InLane(p.Lane)
	}
	prov, known := a.providers[p.Provider]
	if err := unmarshalInput(a.j, &in); err != nil || !laned || !known {
		// Nothing to read it with: its hold is charged, as a write-off's.
		r.paid.Cost, r.paid.Estimated = max(r.paid.Cost, a.held), true
		return verdict{write: verdictRetry, called: true, fail: failed{class: job.Internal, detail: "the detached generation's rung is gone from the route", paid: r.paid, next: a.j.Reserve}}
	}
	r.rung = rung
	now := a.clock.Now()
	if a.j.State != job.Running {
		return verdict{write: verdictLost, called: true, class: job.Cancelled, r: climbed{paid: a.stopDetached(ctx, rung, p, r.paid)}}
	}
	if v, ok := a.reattachInput(ctx, &r, p, rung, now); !ok {
		return v
	}
	_ = json.Unmarshal(a.j.Input, &in) // checked when the job was created
	lctx, cancel := context.WithTimeout(ctx, a.lookFor())
	defer cancel()
	req := model.RequestFor(a.j.ID, rung, in)
	req.Resume, req.Peek, req.Lane = p.ID, true, rung.Lane
	resp, err := prov.Generate(lctx, req)
	if _, used := model.Classify(err); err != nil && lctx.Err() != nil && used == (model.Usage{}) && !errors.Is(err, model.ErrGone) {
		// The read, not the generation, ran out of time (a stalled
		// answer): one that may pass, as a 5xx is. Failing the attempt
		// here would leave the generation running, billed, and unread.
		err = model.ErrStillRunning
	}
	if errors.Is(err, model.ErrStillRunning) {
		if a.reattachWait(p, rung, now) > 0 {
			a.pending = &p
			return verdict{write: verdictDetach, called: true, r: r}
		}
		var u model.Usage
		if u, resp, err = a.stopped(ctx, rung, p); err != nil {
			r.pay(u, rung)
			class, detail := job.Timeout, "the detached generation outran its rung's timeout"
			if !a.j.Deadline.After(now) {
				class, detail = job.DeadlineExceeded, "the job's deadline passed while its generation ran"
			}
			return verdict{write: verdictRetry, called: true, fail: failed{class: class, detail: detail, paid: r.paid, next: a.j.Reserve}}
		}
		// It had ended with its answer (the look before was cut off):
		// that answer is the attempt's, as if the look had read it.
	}
	if resp.Model == "" {
		resp.Model = rung.Model
	}
	class, usage := model.Classify(err)
	switch {
	case err == nil:
		usage = resp.Usage
	case errors.Is(err, model.ErrGone):
		usage, class = model.Unanswered(req, false), job.ProviderError
	case usage == (model.Usage{}):
		// A read refused for good, an unknown status: what the
		// generation made is unknown, and it may run on.
		r.paid = a.stopDetached(ctx, rung, p, r.paid)
	}
	r.rung = rung.Served(resp.Served)
	r.pay(usage, r.rung)
	class, err = checked(in, resp, class, err)
	r.resp, r.err, r.class = resp, err, class
	return a.verdictOf(r, nil, a.j.Reserve)
}

// unmarshalInput decodes j's inline input; one the payload store keeps is
// loaded later (reattachInput), and decodes as no input until then.
func unmarshalInput(j job.Job, in *job.Input) error {
	if j.InputRef != nil && len(j.Input) == 0 {
		return nil
	}
	return json.Unmarshal(j.Input, in)
}

// reattachInput loads the reattached attempt's stored input; false with
// the verdict when it cannot: a store that does not answer looks again
// later while the generation may run on, else the attempt is charged its
// hold (as one whose rung is gone) and retried, and the retry's claim
// ends the job if the input is lost.
func (a *attempt) reattachInput(ctx context.Context, r *climbed, p job.Pending, rung job.Rung, now time.Time) (verdict, bool) {
	err := a.loadInput(ctx)
	if err == nil {
		return verdict{}, true
	}
	if _, lost := err.(inputLost); !lost && a.reattachWait(p, rung, now) > 0 {
		a.log.Warn("the payload store did not answer; the detached generation is looked at later", "err", err)
		a.pending = &p
		return verdict{write: verdictDetach, called: true, r: *r}, false
	}
	r.paid.Cost, r.paid.Estimated = max(r.paid.Cost, a.held), true
	return verdict{write: verdictRetry, called: true, fail: failed{class: job.Internal,
		detail: "the stored input could not be read: " + err.Error(), paid: r.paid, next: a.j.Reserve}}, false
}
