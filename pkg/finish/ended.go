package finish

import (
	"context"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Quarantiner keeps the inputs known to fail.
type Quarantiner interface {
	Quarantine(ctx context.Context, q job.Quarantine) error
}

// Metrics receives the counts of ends (CloudWatch EMF in Lambda).
type Metrics interface {
	Emit(metric string, value float64, unit string, dims map[string]string)
}

// AfterEnd is what follows an end that landed, whoever recorded it: the
// job's input quarantined when the end's class says the same input would
// fail again, and the end counted.
type AfterEnd struct {
	// Quarantine keeps an input that ended its job deterministically, for
	// QuarantineFor (nil: nothing is kept).
	Quarantine    Quarantiner
	QuarantineFor time.Duration
	// Metrics counts the end as JobsFailed or JobsAbandoned by class
	// (nil: counted nowhere).
	Metrics Metrics
}

// Ended applies the rules to j, whose end with class landed at now.
func (r AfterEnd) Ended(ctx context.Context, j job.Job, class job.ErrorClass, now time.Time, log *slog.Logger) {
	r.Count(class)
	r.quarantineInput(ctx, j, class, now, log)
}

// Count counts a job that reached a terminal state for good with class:
// all that follows an end of a job that no attempt held (its input was
// never run).
func (r AfterEnd) Count(class job.ErrorClass) {
	if r.Metrics == nil {
		return
	}
	dims := map[string]string{"ErrorClass": string(class)}
	if class.FinalState() == job.Abandoned {
		r.Metrics.Emit("JobsAbandoned", 1, "Count", dims)
		return
	}
	r.Metrics.Emit("JobsFailed", 1, "Count", dims)
}

// quarantineInput keeps j's input when class says the same input on the
// same route would fail again, so the next create of it is refused at no
// cost (docs/quarantine.md, "Quarantine"). The job has ended whatever
// happens here: a put that fails is logged, and costs at most one more
// failed attempt of the same input.
func (r AfterEnd) quarantineInput(ctx context.Context, j job.Job, class job.ErrorClass, now time.Time, log *slog.Logger) {
	if r.Quarantine == nil {
		return
	}
	q, ok := job.QuarantineOf(j, class, now, r.QuarantineFor)
	if !ok {
		return
	}
	if err := r.Quarantine.Quarantine(ctx, q); err != nil {
		log.Warn("the input could not be quarantined", "error_class", class, "err", err)
		return
	}
	log.Info("input quarantined", "error_class", class, "until", q.Until)
}
