package fake

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// batch is one submitted batch: its requests, when it was submitted, and
// its results once first read (a batch's generations are made and billed
// once, however often they are read).
type batch struct {
	reqs    []model.Request
	at      time.Time
	results map[string]batchResult
}

type batchResult struct {
	resp model.Response
	err  error
}

// SubmitBatch takes reqs as one batch; a second submit under the same key
// answers the first one's id (a provider that deduplicates).
func (p *Provider) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	id := "fbatch_" + key
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.batches == nil {
		p.batches = map[string]*batch{}
	}
	if _, ok := p.batches[id]; ok {
		return id, nil
	}
	p.batches[id] = &batch{reqs: append([]model.Request(nil), reqs...), at: p.now()}
	for _, r := range reqs {
		p.calls[r.JobID]++
		p.lanes[r.JobID] = append(p.lanes[r.JobID], job.Batch)
	}
	return id, nil
}

// BatchEnded reports whether the batch id is older than the batch
// latency (Config.BatchLatency, else four times the call latency).
func (p *Provider) BatchEnded(_ context.Context, id string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.batches[id]
	if !ok {
		return false, &model.Error{Class: job.InvalidRequest, Detail: "fake: no such batch"}
	}
	return p.now().Sub(b.at) >= p.batchLatency(), nil
}

// now is the time on the provider's clock (Config.Clock).
func (p *Provider) now() time.Time {
	if p.cfg.Clock != nil {
		return p.cfg.Clock.Now()
	}
	return time.Now()
}

func (p *Provider) batchLatency() time.Duration {
	if p.cfg.BatchLatency > 0 {
		return p.cfg.BatchLatency
	}
	return 4 * p.cfg.Latency
}

// BatchResults calls each with every request's outcome, in job id order:
// scripted as a call is ([[fake:fail=CLASS]] fails the item, billed its
// prompt), generated and billed at the first read.
func (p *Provider) BatchResults(ctx context.Context, id string, each func(string, model.Response, error) error) error {
	if ended, err := p.BatchEnded(ctx, id); err != nil || !ended {
		return fmt.Errorf("fake: batch %s has not ended (%v)", id, err)
	}
	p.mu.Lock()
	b := p.batches[id]
	if b.results == nil {
		b.results = map[string]batchResult{}
		for _, r := range b.reqs {
			b.results[r.JobID] = p.answerLocked(r)
		}
	}
	ids := make([]string, 0, len(b.results))
	for jobID := range b.results {
		ids = append(ids, jobID)
	}
	results := b.results
	p.mu.Unlock()
	sort.Strings(ids)
	for _, jobID := range ids {
		if err := each(jobID, results[jobID].resp, results[jobID].err); err != nil {
			return err
		}
	}
	return nil
}

// answerLocked is r's batch answer, billed (p.mu held).
func (p *Provider) answerLocked(r model.Request) batchResult {
	sc := parse(r, 0)
	in, out := inputTokens(r), outputTokens(r, sc)
	if sc.failClass != "" {
		p.spent[r.JobID] += p.cfg.Price.Cost(in, 0)
		return batchResult{err: &model.Error{Class: sc.failClass, Detail: "fake: scripted " + string(sc.failClass), Usage: model.Usage{InputTokens: in}}}
	}
	u := sc.usage(in, out)
	p.gens[r.JobID]++
	p.spent[r.JobID] += u.Cost(p.cfg.Price)
	name := r.Model
	if name == "" {
		name = "fake"
	}
	return batchResult{resp: model.Response{Output: sc.padded(reply(r, int(out))), Model: name, FinishReason: "stop", Usage: u}}
}
