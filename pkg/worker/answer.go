package worker

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
)

// Answers is the part of the payload store (pkg/s3's Payloads) an attempt
// puts an answer too large for the record in (docs/payloads.md,
// "Answers").
type Answers interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// errNoAnswers is an answer too large for the record on a worker with
// no payload store: nowhere to keep it.
var errNoAnswers = &job.Error{Code: job.CodeUnavailable, Message: "no payload store is configured for a large answer"}

// putAnswer puts result at the attempt's key, retried as a finishing
// write is (retryWrite) for at most half of what is left of ctx (the
// finish context): the other half is the record's, which must land
// whatever happens to the put, since it carries the answer's cost.
func (a *attempt) putAnswer(ctx context.Context, result []byte) (*job.Payload, error) {
	if a.answers == nil {
		return nil, errNoAnswers
	}
	pctx, cancel := halfOf(ctx)
	defer cancel()
	key := finish.ResultKey(a.j.ID, a.owner)
	err := retryWrite(pctx, a.rand, func() error { return a.answers.Put(pctx, key, result, "application/json") })
	if err != nil {
		return nil, err
	}
	return finish.ResultRef(key, result), nil
}

// halfOf is ctx ending halfway to its deadline.
func halfOf(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
}

// succeedBy is the succeed of f with result kept where it fits: inline
// up to finish.MaxInlineResult (or when inline is true), else by its ref, put
// first.
func (a *attempt) succeedBy(ctx context.Context, f finish.Of, r climbed, result []byte, inline bool) (finish.Outcome, error) {
	model := r.rung.Provider + "/" + r.resp.Model
	if inline {
		return f.Succeed(result, model, r.rung.Lane), nil
	}
	ref, err := a.putAnswer(ctx, result)
	if err != nil {
		return finish.Outcome{}, err
	}
	return f.SucceedByRef(ref, model, r.rung.Lane), nil
}

// answerUnstored records an answer the payload store kept refusing: the
// answer is lost, its cost is not. The attempt fails as internal, retried
// as any internal failure is (another attempt generates it again, within
// the budget and max_attempts), or the job ends failed with the cost kept
// (docs/payloads.md, "Answers").
func (a *attempt) answerUnstored(ctx context.Context, r climbed, err error) outcome {
	a.log.Error("the payload store refused a large answer; its cost is kept and the attempt fails", "err", err)
	a.meter.count("AnswersUnstored", nil)
	return a.retryOrEnd(ctx, failed{class: job.Internal, detail: "the payload store refused the answer", paid: r.paid, next: a.j.Reserve})
}
