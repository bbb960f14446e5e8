// Package collector is the batch lane's scheduled side
// (docs/lanes.md, "The batch lane"): each run carries every open
// batch one step on (submit, poll, settle), hands back the jobs whose
// batch is not done in time for their deadline, and collects the jobs
// waiting in each rung's batch lane into a new batch when enough wait or
// the first has waited its window. Every step is recorded before the next
// starts, so a run that dies loses nothing: the next one carries on.
package collector

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Store is the part of the job store the collector reads and writes.
type Store interface {
	Get(context.Context, string) (job.Job, error)
	Enlisted(ctx context.Context, lane string, limit int) ([]job.Enlistee, error)
	Collect(context.Context, job.Collect) (job.Job, error)
	finish.Finisher // the finishing writes, recorded as every finisher records them
	Defer(context.Context, job.Defer) (job.Job, error)
}

// Batches keeps the collector's batch records.
type Batches interface {
	OpenBatch(context.Context, job.BatchRecord) error
	Batches(context.Context) ([]job.BatchRecord, error)
	SaveBatch(context.Context, job.BatchRecord) error
}

// Queue re-sends a job the batch lane handed back: its message was
// deleted when it was enlisted.
type Queue interface {
	Send(ctx context.Context, jobID, tenant string) error
}

// Metrics receives the collector's counts as CloudWatch EMF metrics
// (pkg/emf's Writer): BatchesRefused, a batch its provider refused to
// make (the BatchesRefused alarm).
type Metrics interface {
	Emit(metric string, value float64, unit string, dims map[string]string)
}

type noMetrics struct{}

func (noMetrics) Emit(string, float64, string, map[string]string) {}

// Config is what a collector is handed.
type Config struct {
	Store     Store
	Batches   Batches
	Queue     Queue
	Providers map[string]model.Provider
	Routes    map[string]job.Route
	Clock     job.Clock
	Retention job.Retention
	Logger    *slog.Logger
	// Every is how long until the next run may reach a job (a minute
	// when zero): the collector's period plus how long a run may take.
	// A job whose lease ends within it is handed back now, since the
	// next run would be too late.
	Every time.Duration
	// NewID names a new batch (random when nil).
	NewID func() string
	// Metrics counts what operators are alarmed on (none when nil).
	Metrics Metrics
	// Quarantine is where a batch item that ended the job with a
	// deterministic class puts its input, for QuarantineFor, as a
	// worker's end does (finish.AfterEnd); nil, or a zero QuarantineFor,
	// quarantines nothing.
	Quarantine    finish.Quarantiner
	QuarantineFor time.Duration
	// Answers is where a batch answer too large for the record is put
	// (docs/payloads.md, "Answers"); nil keeps every answer inline.
	Answers Answers
	// Inputs reads the inputs records keep in the payload store; nil
	// hands such a job back, and its worker ends it.
	Inputs Inputs
}

// Collector runs the batch lane.
type Collector struct {
	*crew
}

// crew is what each of the collector's steps works with, made once from
// the Config (as the worker's crew is): the store, batch records and
// queue it writes, the providers and routes it calls, its clock, rules
// and counts.
type crew struct {
	store     Store
	batches   Batches
	queue     Queue
	providers map[string]model.Provider
	routes    map[string]job.Route
	clock     job.Clock
	retention job.Retention
	every     time.Duration
	newID     func() string
	metrics   Metrics
	log       *slog.Logger
	// afterEnd follows a batch item's end as every finisher's: the input
	// quarantined, the end counted in JobsFailed or JobsAbandoned, whose
	// alarms (a provider refusing the key, retryable failures) hold for a
	// job that failed in a batch as for one that failed in a call.
	afterEnd finish.AfterEnd
	answers  Answers // nil keeps every answer inline
	inputs   Inputs
}

// New returns a collector; a nil Logger, Clock, NewID or Metrics get
// defaults.
func New(cfg Config) *Collector {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = job.SystemClock{}
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	return &Collector{crew: &crew{store: cfg.Store, batches: cfg.Batches, queue: cfg.Queue,
		providers: cfg.Providers, routes: cfg.Routes, clock: cfg.Clock, retention: cfg.Retention,
		every: cfg.Every, newID: cfg.NewID, metrics: cfg.Metrics, log: cfg.Logger, answers: cfg.Answers,
		afterEnd: finish.AfterEnd{Quarantine: cfg.Quarantine, QuarantineFor: cfg.QuarantineFor, Metrics: cfg.Metrics},
		inputs:   cfg.Inputs}}
}

// Run carries every open batch one step on, then collects new ones. An
// error is logged (unless ctx ended: the process is stopping) and the run
// goes on with the next batch or lane: one provider's outage does not
// stop another's.
func (c *Collector) Run(ctx context.Context) error {
	open, err := c.batches.Batches(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range open {
		if err := c.advance(ctx, b); err != nil {
			c.warn(ctx, "a batch could not be carried on", "batch", b.ID, "state", b.State, "err", err)
			errs = append(errs, err)
		}
	}
	for _, l := range c.lanes() {
		if err := c.collect(ctx, l); err != nil {
			c.warn(ctx, "a batch lane could not be collected", "lane", l.key, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// warn logs a failed step, unless ctx ended: the process is stopping.
func (c *Collector) warn(ctx context.Context, msg string, args ...any) {
	if ctx.Err() == nil {
		c.log.Warn(msg, args...)
	}
}

// lane is one rung's batch lane of one route.
type lane struct {
	key   string
	route string
	rung  job.Rung
}

// embeddingBatchJobs is the most jobs an embedding rung's batch holds:
// OpenAI's "/v1/embeddings batches are also restricted to a maximum of
// 50,000 embedding inputs across all requests in the batch" (the batch
// create's `endpoint`), and a job holds up to job.MaxTexts texts
// (docs/embeddings.md, "The batch lane").
const embeddingBatchJobs = 50_000 / job.MaxTexts

// lanes are the routes' batch lanes. A lane is of one kind, as its rung
// is (an embedding model's takes texts only, a chat model's messages
// only), so a batch of it is all chat or all embeddings, on one endpoint.
func (c *Collector) lanes() []lane {
	var out []lane
	for name, r := range c.routes {
		for i, g := range r.Rungs {
			if b, ok := g.InLane(job.Batch); ok {
				if b.Embeds && (b.MaxJobs <= 0 || b.MaxJobs > embeddingBatchJobs) {
					b.MaxJobs = embeddingBatchJobs
				}
				out = append(out, lane{key: job.LaneKey(name, i), route: name, rung: b})
			}
		}
	}
	return out
}

// laneOf is the batch lane b was collected from, and false when the
// routes no longer offer it.
func (c *Collector) laneOf(b job.BatchRecord) (lane, bool) {
	for _, l := range c.lanes() {
		if l.key == b.Lane {
			return l, true
		}
	}
	return lane{}, false
}

// batcher is the provider of l's rung as a batcher.
func (c *Collector) batcher(l lane) (model.Batcher, error) {
	p, ok := c.providers[l.rung.Provider].(model.Batcher)
	if !ok {
		return nil, errors.New("provider " + l.rung.Provider + " takes no batches")
	}
	return p, nil
}

// advance carries b one step on.
func (c *Collector) advance(ctx context.Context, b job.BatchRecord) error {
	if b.State == job.Refused {
		return c.handBackRefused(ctx, b) // nothing is sent: the lane may be gone
	}
	l, ok := c.laneOf(b)
	if !ok {
		return errors.New("the routes no longer offer the batch's lane " + b.Lane)
	}
	switch b.State {
	case job.Collecting:
		return c.submit(ctx, l, b)
	case job.Sealed:
		return c.resend(ctx, l, b)
	case job.Submitted:
		return c.poll(ctx, l, b)
	}
	return nil
}

func randomID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "b_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
