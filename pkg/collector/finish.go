package collector

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// succeed records f's answer from its batch. A refused finish (the job
// was handed back, cancelled or written off) still settles its cost.
func (c *Collector) succeed(ctx context.Context, l lane, f finish.Of, resp model.Response) error {
	if resp.Model == "" {
		resp.Model = l.rung.Model
	}
	result, err := job.EncodeJSON(resp.Result())
	if err != nil {
		return err
	}
	_, err = f.Succeed(result, l.rung.Provider+"/"+resp.Model, job.Batch).Apply(ctx, c.store)
	return refusedIsSettled(err)
}

// fail records f's failed item: released to the queue (and re-sent: its
// message went when it was enlisted) while another attempt may fix it,
// else ended, and the end followed as every finisher's is (its input
// quarantined when its class is deterministic).
func (c *Collector) fail(ctx context.Context, f finish.Of, class job.ErrorClass) error {
	j := f.Job
	d := job.AfterError(j, f.Now, class, f.Settlement.Cost, job.NextAttempt{Reserve: j.Reserve})
	if d.Action == job.Stop {
		_, err := f.End(d.Class, "the batch item failed").Apply(ctx, c.store)
		if err == nil {
			c.afterEnd.Ended(ctx, j, d.Class, f.Now, c.log.With("job_id", j.ID))
		}
		return refusedIsSettled(err)
	}
	_, err := f.Release(class, "the batch item failed", time.Time{}).Apply(ctx, c.store)
	if err != nil {
		return refusedIsSettled(err)
	}
	return c.queue.Send(ctx, j.ID, j.Tenant)
}

// refusedIsSettled is nil for a finish the record refused: the store
// settled its cost all the same, and the job is not the batch's to finish.
func refusedIsSettled(err error) error {
	if job.ErrorCode(err) == job.CodeConflict {
		return nil
	}
	return err
}
