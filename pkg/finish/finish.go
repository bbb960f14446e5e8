// Package finish is how an attempt, or a job's stay in a batch, ends on
// the record: the finishing writes (succeed, release, end) that carry its
// settlement, and the rules that follow an end that landed (the input's
// quarantine, the end's count). The worker, the collector, parking and the
// reconciler build their finishing writes here, so that an end means the
// same whoever records it.
package finish

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Outcome is an attempt's finishing write: exactly one field is set.
// Parked (pkg/parking), it is stored as this JSON, read back by the same
// or a later release of the code; a field is only ever added.
type Outcome struct {
	Succeed *job.Succeed `json:"succeed,omitempty"`
	Release *job.Release `json:"release,omitempty"`
	End     *job.End     `json:"end,omitempty"`
}

// IDs are the job and the attempt's lease owner the outcome settles.
func (o Outcome) IDs() (id, owner string) {
	switch {
	case o.Succeed != nil:
		return o.Succeed.ID, o.Succeed.Owner
	case o.Release != nil:
		return o.Release.ID, o.Release.Owner
	case o.End != nil:
		return o.End.ID, o.End.Owner
	}
	return "", ""
}

// Finisher is the part of the job store that records an outcome.
type Finisher interface {
	Succeed(context.Context, job.Succeed) (job.Job, error)
	Release(context.Context, job.Release) (job.Job, error)
	End(context.Context, job.End) (job.Job, error)
}

// Apply records o in s. A repeat of an outcome already applied (its first
// answer lost) is recognised by the store and answers the record.
func (o Outcome) Apply(ctx context.Context, s Finisher) (job.Job, error) {
	switch {
	case o.Succeed != nil:
		return s.Succeed(ctx, *o.Succeed)
	case o.Release != nil:
		return s.Release(ctx, *o.Release)
	case o.End != nil:
		return s.End(ctx, *o.End)
	}
	return job.Job{}, errors.New("finish: an empty outcome")
}

// Of is one finish of Job by Owner (an attempt's lease token, or a
// batch's job.BatchOwner) at Now, settling Settlement; Retention says how
// long a finished record is kept. Its methods are the finishing writes.
type Of struct {
	Job        job.Job
	Owner      string
	Now        time.Time
	Settlement job.Settlement
	Retention  job.Retention
}

// Succeed records the answer result, which model gave in lane.
func (f Of) Succeed(result json.RawMessage, model string, lane job.Lane) Outcome {
	return Outcome{Succeed: &job.Succeed{ID: f.Job.ID, Owner: f.Owner, Now: f.Now, Settlement: f.Settlement,
		Result: result, Model: model, Lane: lane, ExpiresAt: f.Retention.ExpiresAt(job.Succeeded, f.Now)}}
}

// SucceedByRef records an answer too large for the record by where it
// was put in the payload store (ref), which model gave it in lane.
func (f Of) SucceedByRef(ref *job.Payload, model string, lane job.Lane) Outcome {
	o := f.Succeed(nil, model, lane)
	o.Succeed.ResultRef = ref
	return o
}

// Release hands the job back to the queue after a failure of class, to be
// claimed again from notBefore (zero: at once).
func (f Of) Release(class job.ErrorClass, detail string, notBefore time.Time) Outcome {
	return Outcome{Release: &job.Release{ID: f.Job.ID, Owner: f.Owner, Now: f.Now, Settlement: f.Settlement,
		Class: class, Detail: detail, NotBefore: notBefore}}
}

// HandBack is the batch lane handing the job back unanswered (a release
// the store tells apart from a failed item's under the same batch owner:
// job.Release.HandBack), to be claimed again at once.
func (f Of) HandBack(class job.ErrorClass, detail string) Outcome {
	o := f.Release(class, detail, time.Time{})
	o.Release.HandBack = true
	return o
}

// End ends the job for good with class.
func (f Of) End(class job.ErrorClass, detail string) Outcome {
	return Outcome{End: &job.End{ID: f.Job.ID, Owner: f.Owner, Now: f.Now, Settlement: f.Settlement,
		Class: class, Detail: detail, ExpiresAt: f.Retention.ExpiresAt(class.FinalState(), f.Now)}}
}
