package collector

import (
	"context"
	"errors"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// refused is the class and detail of a send the provider refused, and
// whether it did: a 4xx answer (a bad request, the key, a quota, a rate
// limit), so no batch was made by it. A 5xx, a timeout or a transport
// failure may have made one, and the batch stays sealed to be sent
// again. A send again (an earlier one may have made the batch, its
// answer lost) counts only a refusal of the input itself as final: the
// provider answers a batch it made of the same input (by its key, its
// token, or when it was made) before refusing the input, but a refused
// key or quota may have refused the lookup for it, and the batch it
// finds once the key works again must still be settled.
func refused(err error, again bool) (job.ErrorClass, string, bool) {
	var me *model.Error
	if err == nil || !errors.As(err, &me) {
		return "", "", false
	}
	switch me.Class {
	case job.InvalidRequest, job.ContextLengthExceeded, job.ContentFiltered:
		return me.Class, me.Detail, true
	case job.Auth, job.QuotaExhausted, job.RateLimited, job.CapacityUnavailable:
		return me.Class, me.Detail, !again
	}
	return "", "", false
}

// refuse records that the provider refused to make sealed batch b, with
// its class and detail, then hands b's jobs back. The record says
// Refused before any job goes back: a run that dies between the two
// hands back the rest and never sends b again, so no job handed back
// uncounted is also generated in b. The refusal is counted once
// (BatchesRefused), here.
func (c *Collector) refuse(ctx context.Context, b job.BatchRecord, class job.ErrorClass, detail string) error {
	b.State, b.Refusal, b.RefusalDetail, b.UpdatedAt = job.Refused, class, detail, c.clock.Now()
	if err := c.batches.SaveBatch(ctx, b); err != nil {
		return err
	}
	c.metrics.Emit("BatchesRefused", 1, "Count", nil)
	c.log.Warn("the provider refused a batch; its jobs are handed back", "batch", b.ID, "class", class, "detail", detail,
		"jobs", len(b.Jobs), "lane", b.Lane)
	return c.handBackRefused(ctx, b)
}

// handBackRefused hands back every job of refused batch b that is still
// b's, uncounted (handBackUnsent): no generation was made, so nothing is
// charged (not even an estimate: its hold is returned) and no attempt is
// spent; its worker plans again with the time left. b is settled once
// every one is back; until then each run carries it on.
func (c *Collector) handBackRefused(ctx context.Context, b job.BatchRecord) error {
	owner := job.BatchOwner(b.ID)
	why := "the provider refused its batch (" + string(b.Refusal) + ")"
	var errs []error
	for _, bj := range b.Jobs {
		j, err := c.read(ctx, bj.ID)
		switch {
		case err != nil:
			errs = append(errs, err)
		case j.LeaseOwner != owner:
			// Not b's: handed back by an earlier run, or cancelled and settled.
		default:
			errs = append(errs, c.handBackUnsent(ctx, j, why))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.State, b.UpdatedAt = job.Settled, c.clock.Now()
	return c.batches.SaveBatch(ctx, b)
}
