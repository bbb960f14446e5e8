package worker

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// end ends the held job for good with class, settling what the attempt's
// calls cost (paid).
func (a *attempt) end(ctx context.Context, class job.ErrorClass, detail string, paid job.Settlement) outcome {
	now := a.stamp()
	err := a.record(ctx, parking.Outcome{End: &job.End{ID: a.j.ID, Owner: a.owner, Now: now, Settlement: a.settlement(paid, now),
		Class: class, Detail: detail, ExpiresAt: a.retention.ExpiresAt(class.FinalState(), now)}})
	a.log.Info("job ended", "error_class", class, "state", class.FinalState())
	if err == nil {
		a.meter.ended(class)
		a.quarantineInput(ctx, class, now)
	}
	return a.outcomeOf(err)
}

// quarantineInput keeps the job's input when class says the same input
// on the same route would fail again, so the next create of it is refused
// at no cost (docs/architecture.md, "Quarantine"). The job has ended
// whatever happens here: a put that fails is logged, and costs at most
// one more failed attempt of the same input.
func (a *attempt) quarantineInput(ctx context.Context, class job.ErrorClass, now time.Time) {
	if a.quarantine == nil {
		return
	}
	q, ok := job.QuarantineOf(a.j, class, now, a.quarantineFor)
	if !ok {
		return
	}
	if err := a.quarantine.Quarantine(ctx, q); err != nil {
		a.log.Warn("the input could not be quarantined", "error_class", class, "err", err)
		return
	}
	a.log.Info("input quarantined", "error_class", class, "until", q.Until)
}
