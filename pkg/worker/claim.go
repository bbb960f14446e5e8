package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// claimTries bounds how often one message re-decides after a claim or an
// end was refused because the record moved underneath it, or a dead
// attempt was written off.
const claimTries = 4

// claim takes m's job before any model call and, when the claim is
// refused, decides from the record what the message still means.
func (w *Worker) claim(ctx context.Context, m message) outcome {
	for range claimTries {
		now := w.clock.Now()
		owner := w.cfg.NewOwner()
		// won runs the attempt this claim made ours.
		won := func(j job.Job) outcome { return w.newAttempt(m, j, owner, now).run(ctx) }
		j, err := w.store.Claim(ctx, job.Claim{ID: m.jobID, Owner: owner, Now: now, LeaseUntil: now.Add(w.timing.LeaseTTL), SpendFirst: w.promise(now, owner)})
		switch job.ErrorCode(err) {
		case "":
			return won(j)
		case job.CodeNotFound:
			return w.poison(ctx, m, "job_not_found")
		case job.CodeConflict:
		default:
			// The claim may have been applied and only its answer lost
			// (the SDK's retries ran out): then the job, and the hold the
			// claim took, are ours, and leaving them would leak both.
			if cur, gerr := w.store.Get(ctx, m.jobID); gerr == nil && cur.State == job.Running && cur.LeaseOwner == owner {
				return won(cur)
			}
			m.log.Error("claim failed", "err", err)
			return outcomeTrouble
		}
		cur, _ := job.ConflictJob(err)
		if cur.State == job.Running && cur.LeaseOwner == owner {
			// Our own claim was applied and its answer lost (the SDK retried
			// it and the retry was refused): the job is ours.
			return won(cur)
		}
		if o, again := w.refused(ctx, m, cur, now); !again {
			return o
		}
	}
	return outcomeTrouble
}

// refused acts on a refused claim as job.WhyRefused decides from cur, the
// record now, and reports whether the message should claim again.
func (w *Worker) refused(ctx context.Context, m message, cur job.Job, now time.Time) (outcome, bool) {
	d := job.WhyRefused(cur, now)
	switch d.Action {
	case job.Recover:
		return w.recover(ctx, cur, now, m.log)
	case job.ReattachDue:
		return w.reattach(ctx, m, cur, now)
	case job.Drop:
		m.log.Info("duplicate delivery absorbed by the claim", "state", cur.State)
		w.meter.count("DuplicatesAbsorbed", nil)
		return outcomeDelete, false
	case job.Wait:
		// Another worker holds a live lease, or the job waits out a
		// retry backoff: hide the message until that ends, so it
		// returns only if the owner dies or the backoff is over.
		o := w.wait(ctx, m, cur.Tenant, d.Delay+100*time.Millisecond, "a lease or a backoff")
		m.log.Info("job held by another worker or backing off", "wait", d.Delay.String())
		w.meter.count("DuplicatesAbsorbed", nil)
		return o, false
	case job.Stop:
		_, err := finish.Of{Job: job.Job{ID: m.jobID}, Now: now, Retention: w.retention}.End(d.Class, "").Apply(ctx, w.store)
		switch job.ErrorCode(err) {
		case "":
			m.log.Info("job ended before an attempt", "error_class", d.Class)
			w.afterEnd.Count(d.Class)
			return outcomeDelete, false
		case job.CodeConflict:
			return outcomeKeep, true
		default:
			m.log.Error("ending a job failed", "err", err)
			return outcomeTrouble, false
		}
	}
	return outcomeKeep, true // Attempt: the record changed; claim again
}

// newAttempt is the attempt a claim at start by owner won on j, handed
// the worker's crew: what it calls, the rules it follows and the meter it
// counts in.
func (w *Worker) newAttempt(m message, j job.Job, owner string, start time.Time) *attempt {
	a := &attempt{crew: w.crew, m: m, j: j, owner: owner, start: start, log: m.log.With("attempt", j.Attempts), held: j.Reserve}
	a.admission = &admission{limits: w.limits, store: w.store, clock: w.clock, timing: w.timing, rand: w.rand, log: a.log, meter: w.meter,
		j: &a.j, owner: owner, start: &a.start, receives: m.receives()}
	return a
}

// recover settles the dead attempt cur carries: its lease ran out
// unrenewed, so its worker died or is cut off from the store. Its parked
// outcome, if it left one, is recorded (the answer it paid for, at its
// exact cost); otherwise it is written off (job.WriteOff: what it held
// becomes cost, as an estimate), charging nothing when its tenant's
// balances prove it never called (parking.SpendFirst). It reports whether the message should
// decide again (the settlement landed, or the record moved) and, if not,
// what becomes of the message.
func (w *Worker) recover(ctx context.Context, cur job.Job, now time.Time, log *slog.Logger) (outcome, bool) {
	look, err := w.spendFirst.Look(ctx, cur)
	if err != nil {
		if now.Sub(cur.LeaseUntil) < parking.Patience {
			log.Warn("the tenant's spend balance did not answer; the dead attempt is settled later", "err", err)
			return outcomeTrouble, false
		}
		look = parking.Look{} // past patience: charged as any write-off, the direction that never under-counts
	}
	dead := parking.Dead{Job: cur, Now: now, Void: look.Void}
	how, j, err := parking.Recover(ctx, w.store, w.lot, dead)
	if job.ErrorCode(err) == "" && how != parking.Returned {
		w.settleDead(ctx, dead, j, how, look) // docs/spend.md
	}
	switch code := job.ErrorCode(err); {
	case code == "" && how == parking.Voided:
		log.Info("a dead attempt that never called was written off, its hold returned", "dead_owner_attempt", cur.Attempts, "state", j.State)
		return outcomeKeep, true
	case code == "" && how == parking.Returned:
		log.Warn("a job no collector took from the batch lane was given back, its hold returned", "dead_owner", cur.LeaseOwner)
		w.meter.count("AttemptsUncollected", nil)
		return outcomeKeep, true
	case code == "" && how == parking.Unparked:
		log.Info("a dead attempt's parked outcome was recorded", "dead_owner_attempt", cur.Attempts, "state", j.State)
		w.meter.count("OutcomesUnparked", nil)
		return outcomeKeep, true
	case code == "":
		log.Warn("a dead attempt was written off: its hold is charged as an estimate",
			"dead_owner_attempt", cur.Attempts, "charged_cents", cur.Held.String(), "state", j.State)
		w.meter.count("AttemptsWrittenOff", nil)
		return outcomeKeep, true
	case code == job.CodeConflict:
		return outcomeKeep, true
	case code == job.CodeNotFound:
		return outcomeDelete, false
	}
	log.Error("settling a dead attempt failed", "err", err)
	return outcomeTrouble, false
}
