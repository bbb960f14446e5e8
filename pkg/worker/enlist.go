package worker

import (
	"context"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

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
// (docs/architecture.md, "The batch lane").
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
