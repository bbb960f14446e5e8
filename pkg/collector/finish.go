package collector

import (
	"context"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// succeed records j's answer from its batch. A refused finish (the job
// was handed back, cancelled or written off) still settles its cost.
func (c *Collector) succeed(ctx context.Context, l lane, f finish, resp model.Response) error {
	j, owner, set := f.j, f.owner, f.set
	if resp.Model == "" {
		resp.Model = l.rung.Model
	}
	result, err := job.EncodeJSON(resp.Result())
	if err != nil {
		return err
	}
	now := job.NextUpdate(j.UpdatedAt, c.cfg.Clock.Now())
	_, err = c.cfg.Store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: owner, Now: now, Settlement: set, Result: result,
		Model: l.rung.Provider + "/" + resp.Model, Lane: job.Batch, ExpiresAt: c.cfg.Retention.ExpiresAt(job.Succeeded, now)})
	return refusedIsSettled(err)
}

// fail records j's failed item: released to the queue (and re-sent: its
// message went when it was enlisted) while another attempt may fix it,
// else ended.
func (c *Collector) fail(ctx context.Context, f finish, class job.ErrorClass) error {
	j, owner, set := f.j, f.owner, f.set
	now := job.NextUpdate(j.UpdatedAt, c.cfg.Clock.Now())
	d := job.AfterError(j, now, class, set.Cost, job.NextAttempt{Reserve: j.Reserve})
	if d.Action == job.Stop {
		_, err := c.cfg.Store.End(ctx, job.End{ID: j.ID, Owner: owner, Now: now, Settlement: set, Class: d.Class,
			Detail: "the batch item failed", ExpiresAt: c.cfg.Retention.ExpiresAt(d.Class.FinalState(), now)})
		return refusedIsSettled(err)
	}
	_, err := c.cfg.Store.Release(ctx, job.Release{ID: j.ID, Owner: owner, Now: now, Settlement: set, Class: class,
		Detail: "the batch item failed"})
	if err != nil {
		return refusedIsSettled(err)
	}
	return c.cfg.Queue.Send(ctx, j.ID, j.Tenant)
}

// refusedIsSettled is nil for a finish the record refused: the store
// settled its cost all the same, and the job is not the batch's to finish.
func refusedIsSettled(err error) error {
	if job.ErrorCode(err) == job.CodeConflict {
		return nil
	}
	return err
}
