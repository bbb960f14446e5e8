package worker

import (
	"context"

	"github.com/aijobs/aijobs/pkg/job"
)

// end ends the held job for good with class, settling what the attempt's
// calls cost (paid); an end that landed is followed by the rules every
// finisher follows (finish.AfterEnd: the input's quarantine, the count).
func (a *attempt) end(ctx context.Context, class job.ErrorClass, detail string, paid job.Settlement) outcome {
	now := a.stamp()
	err := a.record(ctx, a.finishAt(paid, now).End(class, detail))
	a.log.Info("job ended", "error_class", class, "state", class.FinalState())
	if err == nil {
		a.afterEnd.Ended(ctx, a.j, class, now, a.log)
	}
	return a.outcomeOf(err)
}
