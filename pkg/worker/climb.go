package worker

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// climbed is how an attempt's climb down the route ended: the response of
// the rung that answered, or the error and class of the last rung tried,
// what every rung tried cost together (the Cost and Estimated of the
// attempt's settlement), and how long the climb took.
type climbed struct {
	resp  model.Response
	err   error
	class job.ErrorClass
	rung  job.Rung
	tried int
	paid  job.Settlement
	took  time.Duration
	// enlisted says the attempt made no call: it handed the job to its
	// rung's batch lane (attempt.enlist), whose collector settles it.
	enlisted bool
	// wait is how long the bucket of the next call's key asked to wait
	// when the climb stopped for it (attempt.outOfCapacity).
	wait time.Duration
}

// pay adds what a call with usage u on rung g cost, and saved against
// g's standard lane, to what the climb paid; g's lane is the attempt's
// last call's so far.
func (r *climbed) pay(u model.Usage, g job.Rung) {
	if r.paid.Lane = g.Lane; r.paid.Lane == "" {
		r.paid.Lane = job.Standard
	}
	r.paid.Cost += u.Cost(g.Price)
	r.paid.Saved += u.Saved(g)
	r.paid.Estimated = r.paid.Estimated || u.Estimated
}

// climb calls the route's rungs in order until one answers, one fails with
// a class the route does not fall back on, the attempt's own context ends,
// or the next call's worst case no longer fits in avail. On each rung it
// tries the lanes the rung's plan names (job.Rung.Plan: the cheapest that
// fit the job's deadline first), moving on to the next lane when one
// refuses for want of capacity or outlives its own timeout.
func (a *attempt) climb(ctx context.Context, route job.Route, in job.Input, avail job.Nanocents) climbed {
	var r climbed
	first := true
	for i, rung := range route.Rungs {
		if ctx.Err() != nil {
			// The attempt ended before this rung (a lease that could not be
			// renewed even before the first call): never start a call.
			if first {
				r.err, r.class = context.Cause(ctx), job.Timeout
			}
			return r
		}
		plan, offered := a.plan(rung, in, avail-r.paid.Cost)
		if !offered {
			continue // the job allows none of this rung's lanes
		}
		if len(plan) == 0 {
			a.log.Info("no fallback: the next rung's worst case does not fit the budget", "error_class", r.class, "rung", i)
			return r
		}
		if !first {
			a.log.Info("falling back to the next rung", "error_class", r.class, "rung", i, "provider", rung.Provider, "model", rung.Model)
			a.meter.count("Fallbacks", map[string]string{"ErrorClass": string(r.class)})
		}
		r.tried = i + 1
		if a.climbLanes(ctx, &r, plan, in, first) {
			return r
		}
		first = false
		if !route.FallsBackOn(r.class) {
			return r
		}
	}
	return r
}

// plan is the lanes of rung to try with avail left of the budget, and
// whether the rung offers any lane the job allows.
func (a *attempt) plan(rung job.Rung, in job.Input, avail job.Nanocents) ([]job.Rung, bool) {
	left := a.j.Deadline.Sub(a.clock.Now())
	if len(rung.Plan(in, a.j.Lanes, left, job.Nanocents(math.MaxInt64))) == 0 {
		return nil, false
	}
	return rung.Plan(in, a.j.Lanes, left, avail), true
}

// climbLanes calls the lanes of one rung's plan in turn, first saying
// whether the attempt's admission took for its first call (the entry
// rung's), and reports whether the climb is over: answered, enlisted in
// the batch lane, the attempt itself ended, or the next call could not be
// made (its hold or its take refused). Otherwise r holds how the rung's
// last lane failed.
func (a *attempt) climbLanes(ctx context.Context, r *climbed, plan []job.Rung, in job.Input, first bool) bool {
	moved := false // a call in this rung's plan came before
	for k, lane := range plan {
		if lane.Lane == job.Batch {
			until, ok := a.batchLease(lane, plan[k+1:])
			if !first || moved || !ok {
				continue // a job enters a batch lane only before any call, with time to wait
			}
			a.enlistIn(ctx, r, lane, in, until)
			return true
		}
		if !a.holdFor(ctx, r.paid.Cost+lane.WorstCase(in)) {
			if r.err == nil {
				// Nothing was called yet: the attempt fails, retried.
				r.err, r.class = errHoldRefused, job.Internal
			}
			return true
		}
		if (!first || moved) && !a.takeLater(ctx, r, lane, in) {
			return true
		}
		if moved {
			a.log.Info("moving to the rung's next lane", "error_class", r.class, "lane", lane.String())
			a.meter.count("LaneMoves", map[string]string{"ErrorClass": string(r.class), "Lane": string(lane.Lane)})
		}
		moved = true
		if k+1 < len(plan) {
			lane.Timeout = a.laneTimeout(lane, plan[k+1])
		}
		timedOut := a.callLane(ctx, r, lane, in)
		if r.err == nil || ctx.Err() != nil || errors.Is(r.err, model.ErrStillRunning) {
			return true // answered, detached, or the attempt itself is over
		}
		if timedOut {
			r.class = job.Timeout
		}
		if !timedOut && r.class != job.CapacityUnavailable {
			return false
		}
	}
	if !moved && r.err == nil {
		// Every lane of the plan was a batch lane the job could not
		// enter, and nothing was called: the attempt fails, or it would
		// read as answered with an empty result.
		r.err, r.class = errNoLaneInTime, job.DeadlineExceeded
	}
	return false
}

// enlistIn hands the job to lane, a batch lane, for its lease there
// (until): the climb r ends enlisted, or failed (Internal) when the
// enlist is refused.
func (a *attempt) enlistIn(ctx context.Context, r *climbed, lane job.Rung, in job.Input, until time.Time) {
	r.rung, r.enlisted = lane, true
	if r.err = a.enlist(ctx, lane, in, until); r.err != nil {
		r.class, r.enlisted = job.Internal, false
	}
}

// takeLater takes a later call's worst case (a fallback rung's, or the
// rung's next lane's) from its bucket with no wait in place: the route's
// timeout and the lease's cap are already running. It reports whether
// the call may go; a wait the bucket asks for ends the climb r with it.
func (a *attempt) takeLater(ctx context.Context, r *climbed, lane job.Rung, in job.Input) bool {
	wait, _ := a.admission.take(ctx, lane, in, 0)
	if wait <= 0 {
		return true
	}
	a.log.Info("no fallback: the next call's provider is rate limited", "error_class", r.class, "lane", lane.String(), "wait_ms", wait.Milliseconds())
	r.wait = wait
	return false
}

// callLane calls lane for the climb r and records on r what it answered
// and what it cost, and tells the lane's bucket how it went; it reports
// whether the call ran out of its time.
func (a *attempt) callLane(ctx context.Context, r *climbed, lane job.Rung, in job.Input) bool {
	r.rung = lane
	a.progress.Store(0)
	resp, err, timedOut := a.call(ctx, lane, in, a.awaiter(ctx, lane, r.paid))
	if errors.Is(err, model.ErrStillRunning) {
		// Detached: nothing is billed or given back to the bucket yet;
		// the reattach settles the generation (docs/resume.md, "Detached
		// routes"), and the take stays taken while it runs.
		r.resp, r.err, r.class = model.Response{}, err, ""
		return false
	}
	class, usage := model.Classify(err)
	if err == nil {
		usage = resp.Usage
	}
	// Priced at the tier that served the call: a priority call the
	// provider served (and billed) at standard saved nothing.
	r.rung = lane.Served(resp.Served)
	r.pay(usage, r.rung)
	a.untake(context.WithoutCancel(ctx), lane, in, resp, err)
	class, err = checked(in, resp, class, err) // paid above whatever it says
	r.resp, r.err, r.class = resp, err, class
	return timedOut
}

// laneTimeout is how long a call in lane may run when next is the lane
// the attempt moves on to: its own timeout, cut so that next's p99 still
// fits before the job's deadline. A slow lane whose call would leave no
// time for a faster one gives way to it while the deadline can be met.
func (a *attempt) laneTimeout(lane, next job.Rung) time.Duration {
	cut := a.j.Deadline.Sub(a.clock.Now()) - next.P99()
	if cut > 0 && cut < lane.Timeout {
		return cut
	}
	return lane.Timeout
}

// holdFor raises the attempt's hold to need (what it spent so far plus the
// next rung's worst case) before that rung is called, so a worker that
// dies during it leaves a hold covering what the providers may bill. It
// reports whether the rung may be called: a raise the record refuses (the
// budget moved, the lease was lost), or the tenant's spend balance does
// not cover, ends the climb.
func (a *attempt) holdFor(ctx context.Context, need job.Nanocents) bool {
	if need <= a.held {
		return true
	}
	if _, ok := a.admission.holdSpend(ctx, job.SpendEntry(a.j.ID, a.j.Attempts)+"+"+strconv.Itoa(len(a.admission.granted.holds)), need-a.held); !ok {
		a.log.Info("no fallback: the tenant's spend limit does not cover the next rung's worst case", "need_cents", need.String())
		return false
	}
	_, err := a.store.HoldMore(ctx, job.HoldMore{ID: a.j.ID, Owner: a.owner, Now: a.clock.Now(), Amount: need - a.held, Total: need})
	if err != nil {
		a.log.Info("no fallback: raising the attempt's hold for the next rung failed", "need_cents", need.String(), "err", err)
		a.holdUnsure = a.holdUnsure || job.ErrorCode(err) == job.CodeUnavailable
		return false
	}
	a.held = need
	return true
}

// errEnlistRefused is an enlist the record refused or never answered:
// the attempt made no call and fails, retried.
var errEnlistRefused = errors.New("handing the job to the batch lane failed")

// batchLease is how long the batch lane would hold the job: until it
// must come back to meet its deadline in the plan's next lane (then),
// else until its deadline; false when that leaves less than the lane's
// window and one collector period, so the collector would hand it back
// before any batch could serve it, or, with a next lane, less than the
// batch's p99: the job would usually be handed back to that lane before
// its batch answers, and the late answer is billed too. Alone in the
// plan, the lane is the job's one chance, and it waits to its deadline.
func (a *attempt) batchLease(rung job.Rung, then []job.Rung) (time.Time, bool) {
	until := a.j.Deadline
	if len(then) > 0 {
		until = until.Add(-then[0].P99())
	}
	stay := until.Sub(a.clock.Now())
	return until, stay > rung.Window+a.timing.CollectEvery && (len(then) == 0 || stay >= rung.P99())
}

// enlist hands the job to rung's batch lane (job.Enlist) until until
// instead of calling, the hold raised to the batch price's worst case
// first. A collector submits it in a provider batch and settles it
// (docs/lanes.md, "The batch lane").
func (a *attempt) enlist(ctx context.Context, rung job.Rung, in job.Input, until time.Time) error {
	defer a.untake(context.WithoutCancel(ctx), rung, in, model.Response{}, nil) // nothing is called now
	if !a.holdFor(ctx, rung.WorstCase(in)) {
		return errEnlistRefused
	}
	e := job.Enlist{ID: a.j.ID, Owner: a.owner, Now: a.stamp(), Lane: job.LaneKey(a.j.Model, a.rungIndex(rung)), Until: until}
	err := retryWrite(ctx, a.rand, func() error {
		_, err := a.store.Enlist(ctx, e)
		return err
	})
	if cur, ok := job.ConflictJob(err); ok && cur.LeaseOwner == job.BatchOwner(a.owner) {
		err = nil // a retry of an enlist that landed, its answer lost
	}
	if err != nil {
		a.log.Warn("enlisting the job in the batch lane failed", "err", err)
		return errEnlistRefused
	}
	a.log.Info("job enlisted in the batch lane", "lane", e.Lane, "until", until.Format(time.RFC3339))
	a.meter.count("JobsEnlisted", nil)
	return nil
}

// rungIndex is the index of rung in the job's route.
func (a *attempt) rungIndex(rung job.Rung) int {
	return a.routes[a.j.Model].RungOf(rung.Provider, rung.Model)
}

// resumer is a provider that keeps generations by id (OpenAI's background
// responses), so a call can fetch one an earlier attempt started instead
// of generating again (model.Request.Resume).
type resumer interface {
	Resumes() bool
}

// awaitWrite bounds the write that records a pending generation: the
// provider is generating meanwhile, and a store that does not answer
// within it costs only the chance to resume (the call goes on).
const awaitWrite = 2 * time.Second

// awaiter is the Started hook of a call on rung, paid being what the
// attempt's earlier rungs cost: it records the generation the provider
// keeps (job.Await) before the call waits for it, so that if this attempt
// dies, the worker that takes the job over resumes it rather than paying
// for it again (docs/resume.md, "Resuming a paid generation").
func (a *attempt) awaiter(ctx context.Context, rung job.Rung, paid job.Settlement) func(id string) {
	return func(id string) {
		if id == "" || len(id) > job.MaxPendingID {
			a.log.Warn("the provider's generation id is not recordable; it cannot be resumed", "id_bytes", len(id))
			return
		}
		a.started = id
		p := job.Pending{Owner: a.owner, Provider: rung.Provider, Model: rung.Model, ID: id,
			Held: a.held, Paid: paid.Cost, Estimated: paid.Estimated}
		if rung.Lane != job.Standard {
			p.Lane = rung.Lane
		}
		if rung.Detached {
			p.Since = job.Millis(a.clock.Now())
		}
		wctx, cancel := context.WithTimeout(ctx, awaitWrite)
		defer cancel()
		err := retryWrite(wctx, a.rand, func() error {
			_, err := a.store.Await(wctx, job.Await{ID: a.j.ID, Owner: a.owner, Now: a.stamp(), Pending: p})
			return err
		})
		if err != nil {
			a.log.Warn("recording the pending generation failed: it cannot be resumed if this attempt dies", "err", err)
			return
		}
		a.pending = &p
	}
}

// resume fetches the generation a written-off attempt left with its
// provider (job.Job.Resumable) before anything is generated, and reports
// whether it answered. The answer was billed to the dead attempt, once:
// its cost replaces that attempt's estimate (replaceEstimate), and this
// attempt pays nothing for fetching it. A generation that is gone,
// failed, or cannot be fetched is generated again by the climb, as if
// there had been none; the dead attempt's estimate then stays.
func (a *attempt) resume(ctx context.Context, route job.Route, in job.Input) (climbed, bool) {
	if !a.j.Resumable() {
		return climbed{}, false
	}
	p := *a.j.Pending
	rung, laned := job.Rung{}, false
	if i := route.RungOf(p.Provider, p.Model); i >= 0 {
		rung, laned = route.Rungs[i].InLane(p.Lane)
	}
	prov, ok := a.providers[p.Provider]
	if r, can := prov.(resumer); !laned || !ok || !can || !r.Resumes() {
		a.log.Info("the pending generation's rung is no longer a resumable one; generating again", "provider", p.Provider, "model", p.Model, "lane", p.Lane)
		return climbed{}, false
	}
	rctx, cancel := context.WithTimeoutCause(ctx, rung.Timeout, errRungTimeout)
	defer cancel()
	req := model.RequestFor(a.j.ID, rung, in)
	req.Resume = p.ID
	resp, err := prov.Generate(rctx, req)
	if err != nil {
		class, _ := model.Classify(err)
		a.log.Info("the pending generation could not be resumed; generating again", "gone", errors.Is(err, model.ErrGone), "error_class", class)
		a.meter.count("ResumesFailed", nil)
		return climbed{}, false
	}
	if resp.Model == "" {
		resp.Model = rung.Model
	}
	u, rung := resp.Usage, rung.Served(resp.Served)
	a.replaceEstimate(ctx, job.Resume{ID: a.j.ID, Of: p, Cost: u.Cost(rung.Price), Estimated: u.Estimated,
		Saved: u.Saved(rung)})
	// Nothing of the bucket's take was used: the generation was taken for
	// when it was started.
	entry, _ := route.Entry(a.j.Lanes)
	a.untake(context.WithoutCancel(ctx), entry, in, model.Response{}, nil)
	a.log.Info("resumed the pending generation of a written-off attempt", "provider", p.Provider, "model", p.Model)
	a.meter.count("GenerationsResumed", nil)
	// Its cost is on the record already (replaceEstimate), whatever it says.
	class, err := checked(in, resp, "", nil)
	return climbed{resp: resp, err: err, class: class, rung: rung, tried: 1}, true
}

// replaceEstimate replaces the dead attempt's estimate with what its
// generation cost, and adds what its lane saved (job.Resume, stamped
// here). A write that never lands leaves the estimate, an upper bound the
// record already says is estimated.
func (a *attempt) replaceEstimate(ctx context.Context, r job.Resume) {
	err := retryWrite(ctx, a.rand, func() error {
		r.Now = a.stamp()
		_, err := a.store.Resume(ctx, r)
		return err
	})
	if err != nil {
		a.log.Warn("replacing the written-off attempt's estimate with its resumed generation's cost failed; the estimate stays", "err", err)
	}
}
