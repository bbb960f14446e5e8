package worker

import (
	"context"
	"errors"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// resumer is a provider that keeps generations by id (OpenAI's background
// responses), so a call can fetch one an earlier attempt started instead
// of generating again (model.Request.Resume).
type resumer interface {
	Resumes() bool
}

// awaitWrite bounds the write that records a pending generation: the
// provider is generating meanwhile, and a store that does not answer
// within it costs only the chance to resume (the call goes on).
const awaitWrite = 2 * time.Second

// awaiter is the Started hook of a call on rung, paid being what the
// attempt's earlier rungs cost: it records the generation the provider
// keeps (job.Await) before the call waits for it, so that if this attempt
// dies, the worker that takes the job over resumes it rather than paying
// for it again (docs/architecture.md, "Resuming a paid generation").
func (a *attempt) awaiter(ctx context.Context, rung job.Rung, paid job.Settlement) func(id string) {
	return func(id string) {
		if id == "" || len(id) > job.MaxPendingID {
			a.log.Warn("the provider's generation id is not recordable; it cannot be resumed", "id_bytes", len(id))
			return
		}
		p := job.Pending{Owner: a.owner, Provider: rung.Provider, Model: rung.Model, ID: id,
			Held: a.held, Paid: paid.Cost, Estimated: paid.Estimated}
		if rung.Lane != job.Standard {
			p.Lane = rung.Lane
		}
		wctx, cancel := context.WithTimeout(ctx, awaitWrite)
		defer cancel()
		err := retryWrite(wctx, a.rand, func() error {
			_, err := a.store.Await(wctx, job.Await{ID: a.j.ID, Owner: a.owner, Now: a.stamp(), Pending: p})
			return err
		})
		if err != nil {
			a.log.Warn("recording the pending generation failed: it cannot be resumed if this attempt dies", "err", err)
		}
	}
}

// resume fetches the generation a written-off attempt left with its
// provider (job.Job.Resumable) before anything is generated, and reports
// whether it answered. The answer was billed to the dead attempt, once:
// its cost replaces that attempt's estimate (replaceEstimate), and this
// attempt pays nothing for fetching it. A generation that is gone,
// failed, or cannot be fetched is generated again by the climb, as if
// there had been none; the dead attempt's estimate then stays.
func (a *attempt) resume(ctx context.Context, route job.Route, in job.Input) (climbed, bool) {
	if !a.j.Resumable() {
		return climbed{}, false
	}
	p := *a.j.Pending
	rung, laned := job.Rung{}, false
	if i := route.RungOf(p.Provider, p.Model); i >= 0 {
		rung, laned = route.Rungs[i].InLane(p.Lane)
	}
	prov, ok := a.providers[p.Provider]
	if r, can := prov.(resumer); !laned || !ok || !can || !r.Resumes() {
		a.log.Info("the pending generation's rung is no longer a resumable one; generating again", "provider", p.Provider, "model", p.Model, "lane", p.Lane)
		return climbed{}, false
	}
	rctx, cancel := context.WithTimeoutCause(ctx, rung.Timeout, errRungTimeout)
	defer cancel()
	resp, err := prov.Generate(rctx, model.Request{JobID: a.j.ID, Model: rung.Model, Messages: in.Messages,
		MaxTokens: rung.OutputCap(in), Temperature: in.Temperature, Resume: p.ID})
	if err != nil {
		class, _ := model.Classify(err)
		a.log.Info("the pending generation could not be resumed; generating again", "gone", errors.Is(err, model.ErrGone), "error_class", class)
		a.meter.count("ResumesFailed", nil)
		return climbed{}, false
	}
	if resp.Model == "" {
		resp.Model = rung.Model
	}
	u, rung := resp.Usage, rung.Served(resp.Served)
	a.replaceEstimate(ctx, job.Resume{ID: a.j.ID, Of: p, Cost: u.Cost(rung.Price), Estimated: u.Estimated,
		Saved: u.Saved(rung)})
	// Nothing of the bucket's take was used: the generation was taken for
	// when it was started.
	entry, _ := route.Entry(a.j.Lanes)
	a.untake(context.WithoutCancel(ctx), entry, in, model.Response{}, nil)
	a.log.Info("resumed the pending generation of a written-off attempt", "provider", p.Provider, "model", p.Model)
	a.meter.count("GenerationsResumed", nil)
	return climbed{resp: resp, rung: rung, tried: 1}, true
}

// replaceEstimate replaces the dead attempt's estimate with what its
// generation cost, and adds what its lane saved (job.Resume, stamped
// here). A write that never lands leaves the estimate, an upper bound the
// record already says is estimated.
func (a *attempt) replaceEstimate(ctx context.Context, r job.Resume) {
	err := retryWrite(ctx, a.rand, func() error {
		r.Now = a.stamp()
		_, err := a.store.Resume(ctx, r)
		return err
	})
	if err != nil {
		a.log.Warn("replacing the written-off attempt's estimate with its resumed generation's cost failed; the estimate stays", "err", err)
	}
}
