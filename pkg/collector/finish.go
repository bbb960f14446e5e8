package collector

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// succeed records f's answer from its batch: inline when small, else put
// in the payload store first and recorded by its ref, as a worker's is
// (docs/payloads.md, "Answers"). A put that fails answers its error: the
// item stays in the batch's list, and the next run records it again. A
// refused finish (the job was handed back, cancelled or written off)
// still settles its cost.
func (c *Collector) succeed(ctx context.Context, l lane, f finish.Of, resp model.Response) error {
	if resp.Model == "" {
		resp.Model = l.rung.Model
	}
	result, err := job.EncodeJSON(resp.Result())
	if err != nil {
		return err
	}
	name := l.rung.Provider + "/" + resp.Model
	inline := len(result) <= finish.MaxInlineResult
	if inline {
		_, err = f.Succeed(result, name, job.Batch).Apply(ctx, c.store)
	}
	if !inline || job.ErrorCode(err) == job.CodeTooLarge {
		// Too large for the record, or refused by it for its size.
		err = c.succeedByRef(ctx, f, result, name)
	}
	return refusedIsSettled(err)
}

// succeedByRef puts result at f's attempt's key, then records its ref.
func (c *Collector) succeedByRef(ctx context.Context, f finish.Of, result []byte, name string) error {
	if c.answers == nil {
		return &job.Error{Code: job.CodeUnavailable, Message: "no payload store is configured for a large answer"}
	}
	key := finish.ResultKey(f.Job.ID, f.Owner)
	if err := c.answers.Put(ctx, key, result, "application/json"); err != nil {
		return err
	}
	_, err := f.SucceedByRef(finish.ResultRef(key, result), name, job.Batch).Apply(ctx, c.store)
	return err
}

// Answers is the part of the payload store (pkg/s3's Payloads) a batch
// answer too large for the record is put in.
type Answers interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
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
