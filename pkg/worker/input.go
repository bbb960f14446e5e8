package worker

import (
	"context"
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
)

// Inputs reads an input the record keeps in the payload store
// (job.Job.InputRef, docs/payloads.md): pkg/s3's Payloads is one. Get
// answers job.NotFound for a key that does not exist, job.CodeTooLarge
// past limit, and job.CodeUnavailable when the store does not answer.
type Inputs interface {
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
}

// inputLost says the record's input object is gone or is not the one
// written: no attempt can ever run the job, so it ends, class internal.
type inputLost struct{ detail string }

func (e inputLost) Error() string { return e.detail }

// loadInput puts the attempt's input in a.j.Input when the record points
// at the payload store. An error of type inputLost is for good; any other
// is the store not answering now, which a later attempt may not meet.
func (a *attempt) loadInput(ctx context.Context) error {
	ref := a.j.InputRef
	if ref == nil || len(a.j.Input) > 0 {
		return nil
	}
	if a.inputs == nil {
		return inputLost{"the input is in the payload store, and this worker has none"}
	}
	b, err := a.inputs.Get(ctx, ref.Key, ref.Size)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound:
		return inputLost{"the stored input is missing from the payload store"}
	case job.CodeTooLarge:
		return inputLost{fmt.Sprintf("the stored input is larger than the %d bytes the record says", ref.Size)}
	default:
		return err
	}
	if err := ref.Check(b); err != nil {
		return inputLost{"the stored input is not the one the job was created with (its size or SHA-256 differs)"}
	}
	a.j.Input = b
	return nil
}

// inputVerdict is what a claimed attempt whose input could not be loaded
// records: a lost input ends the job; a store that does not answer hands
// the job back uncounted, as a claim that found the job store down does.
func (a *attempt) inputVerdict(err error) verdict {
	if lost, ok := err.(inputLost); ok {
		a.log.Error("the job's stored input cannot be used", "key", a.j.InputRef.Key, "detail", lost.detail)
		return verdict{write: verdictEnd, class: job.Internal, detail: lost.detail}
	}
	a.log.Warn("the payload store did not answer; the job is handed back", "err", err)
	return verdict{write: verdictDefer, wait: max(a.timing.BackoffBase, a.timing.Heartbeat), class: job.Internal,
		detail: "the payload store holding the input did not answer"}
}
