package worker

import (
	"context"
	"errors"
	"math"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// The causes a call is stopped with; failureOf names the class each means.
var (
	errLeaseLost      = errors.New("lease lost or job cancelled")
	errLeaseExpiring  = errors.New("lease about to expire unrenewed")
	errHeartbeatPanic = errors.New("the heartbeat panicked")
	errRouteTimeout   = errors.New("model route timeout")
	errRungTimeout    = errors.New("model rung timeout")
	errJobDeadline    = errors.New("job deadline")
	errLambdaDeadline = errors.New("function deadline")
	errHoldRefused    = errors.New("the hold for the chosen lane could not be raised")
	errNoLaneInTime   = errors.New("the batch lane cannot serve the job before its deadline, and no other lane the job allows fits")
)

// call runs one rung under its own timeout and reports whether that
// timeout (not the attempt's) ended it; started is told the id of a
// generation the provider keeps (awaiter).
func (a *attempt) call(ctx context.Context, rung job.Rung, in job.Input, started func(id string)) (model.Response, error, bool) {
	p, ok := a.providers[rung.Provider]
	if !ok {
		return model.Response{}, model.Errorf(job.Internal, "no provider %q", rung.Provider), false
	}
	rctx, cancel := context.WithTimeoutCause(ctx, rung.Timeout, errRungTimeout)
	defer cancel()
	req := model.RequestFor(a.j.ID, rung, in)
	req.Progress = func(tokens int) {
		v := math.Min(float64(tokens)/float64(max(req.MaxTokens, 1)), 1)
		a.progress.Store(math.Float64bits(v))
	}
	req.Started, req.Lane, req.Peek = started, rung.Lane, rung.Detached
	resp, err := p.Generate(rctx, req)
	if errors.Is(err, model.ErrStillRunning) && a.pending == nil && a.started != "" {
		// A detached generation whose id did not reach the record cannot
		// be reattached by another invocation: this one waits for it, as
		// an attached rung does.
		req.Peek, req.Started, req.Resume = false, nil, a.started
		resp, err = p.Generate(rctx, req)
		err = a.writeOffWaited(ctx, p, req, err)
	}
	if resp.Model == "" {
		resp.Model = rung.Model
	}
	return resp, err, err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), errRungTimeout)
}

// writeOffWaited is err, how the wait for this attempt's own detached
// generation (req.Resume) ended, billed as the generation that call made:
// a resume bills nothing when it fails (its generation is taken to be an
// earlier call's), but this one made it, and the provider bills it
// whatever became of the wait. A failure that states no usage (the wait
// cut off, the generation gone or cancelled unread) stops the generation,
// which nobody will read, and is billed its worst case, estimated, as an
// attached call whose answer was lost is.
func (a *attempt) writeOffWaited(ctx context.Context, p model.Provider, req model.Request, err error) error {
	class, used := model.Classify(err)
	if err == nil || used != (model.Usage{}) {
		return err
	}
	if s, ok := p.(abandoner); ok {
		s.Abandon(ctx, req.Resume)
	}
	return &model.Error{Class: class, Detail: detailOf(err), Usage: model.Unanswered(req, false), Err: err}
}
