package worker

import (
	"context"

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
	}
	return a.outcomeOf(err)
}
