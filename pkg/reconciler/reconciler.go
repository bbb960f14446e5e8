// Package reconciler is the backstop for lost messages (docs/decisions.md,
// "The reconciler touches before it sends"): on a schedule it finds jobs queued and untouched for a
// while (their message was lost before or after it was sent) and jobs
// whose lease expired long ago (their worker died and the message is
// gone), and sends their ids again. It decides nothing itself: the
// worker's claim path does, so a re-sent job that finished meanwhile costs
// one round trip, never a second generation. It also reads the dead letter
// queue and marks the jobs found there failed with class dead_lettered, so
// polling clients and operators see them within one period.
package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// Store is the part of the job store the reconciler drives.
type Store interface {
	Unfinished(ctx context.Context, before time.Time, each func(id string) error) error
	Nudge(ctx context.Context, n job.Nudge) (job.Job, error)
	End(ctx context.Context, e job.End) (job.Job, error)
	WriteOff(ctx context.Context, w job.WriteOff) (job.Job, error)
	// Succeed and Release record a dead attempt's parked outcome.
	Succeed(ctx context.Context, t job.Succeed) (job.Job, error)
	Release(ctx context.Context, t job.Release) (job.Job, error)
}

// Queue re-sends a job's id to the workers, says how many messages wait in
// it, and lists the job ids in its dead letter queue without removing them.
type Queue interface {
	Send(ctx context.Context, jobID string) error
	Backlog(ctx context.Context) (int, error)
	DeadLetterIDs(ctx context.Context, max int, hide time.Duration) ([]job.DeadLetter, error)
}

// Metrics receives what a run did (CloudWatch EMF in Lambda).
type Metrics interface {
	Emit(metric string, value float64, unit string, dims map[string]string)
}

// Config wires a Reconciler.
type Config struct {
	Store Store
	Queue Queue
	// After is how long a job must have been untouched (queued) or
	// abandoned by its worker (running, lease expired) to be re-sent.
	After   time.Duration
	Clock   job.Clock
	Logger  *slog.Logger
	Metrics Metrics
	// Parallel bounds the nudges and sends in flight; 0 means 16.
	Parallel int
	// Retention says how long a job marked dead_lettered is kept.
	Retention job.Retention
	// DeadLetterMax bounds the dead letters one sweep reads; 0 means 500.
	DeadLetterMax int
	// DeadLetterHide is how long a sweep hides the dead letters it reads,
	// so it sees each once; they come back for an operator's replay after
	// it. 0 means 30 s.
	DeadLetterHide time.Duration
	// ResendMax bounds the queued jobs one sweep re-sends while the queue
	// has a backlog (oldest first, each at most once while it lasts), so a
	// lost message is re-sent within ceil(older lost-or-waiting jobs /
	// ResendMax) sweeps without a backlog ever growing by more than
	// ResendMax a sweep; 0 means 100. With no backlog every stale queued
	// job is re-sent.
	ResendMax int
	// Parking is where a dead attempt's outcome is looked for before the
	// attempt is written off (pkg/parking); nil parks nothing.
	Parking parking.Lot
}

// Reconciler runs one sweep per call of Run.
type Reconciler struct{ cfg Config }

// New returns a reconciler; nil Clock, Logger and Metrics get defaults.
func New(cfg Config) *Reconciler {
	if cfg.Clock == nil {
		cfg.Clock = job.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 16
	}
	if cfg.ResendMax <= 0 {
		cfg.ResendMax = 100
	}
	if cfg.DeadLetterMax <= 0 {
		cfg.DeadLetterMax = 500
	}
	if cfg.DeadLetterHide <= 0 {
		cfg.DeadLetterHide = 30 * time.Second
	}
	return &Reconciler{cfg: cfg}
}

type noMetrics struct{}

func (noMetrics) Emit(string, float64, string, map[string]string) {}

// Report is what one sweep did.
type Report struct {
	// Candidates are unfinished jobs created before the staleness horizon.
	Candidates int `json:"candidates"`
	// Queued and Running count the jobs re-sent, by the state they were
	// found in.
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// Healthy are candidates that turned out to be fine (touched recently,
	// held by a live worker, or finished meanwhile).
	Healthy int `json:"healthy"`
	Errors  int `json:"errors"`
	// DeadLettered are jobs found in the dead letter queue and marked
	// failed with class dead_lettered by this sweep.
	DeadLettered int `json:"dead_lettered"`
	// Backlog is the messages waiting in the queue when the sweep began;
	// while there are any, a queued job's message is most likely among
	// them: at most ResendMax queued jobs are re-sent, oldest first, each
	// once while the backlog lasts.
	Backlog int `json:"backlog"`
}

// Handle is the Lambda handler for the schedule's event.
func (r *Reconciler) Handle(ctx context.Context, _ events.CloudWatchEvent) (Report, error) {
	return r.Run(ctx)
}

// Run sweeps once. It returns an error only when the candidates could not
// be listed; a job it could not nudge or send is counted and left for the
// next sweep.
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	now := r.cfg.Clock.Now()
	stale := now.Add(-r.cfg.After)
	backlog, err := r.cfg.Queue.Backlog(ctx)
	if err != nil {
		// Unknown: assume one rather than risk doubling it.
		r.cfg.Logger.Warn("reading the queue's backlog failed; queued jobs are re-sent as under a backlog", "err", err)
		backlog = -1
	}
	dead := r.markDeadLettered(ctx, now)
	quota := newQuota(r.cfg.ResendMax)
	if backlog == 0 {
		quota = nil // every stale queued job lost its message
	}
	var rep struct{ candidates, queued, running, healthy, errors atomic.Int64 }
	sem := make(chan struct{}, r.cfg.Parallel)
	var wg sync.WaitGroup
	err = r.cfg.Store.Unfinished(ctx, stale, func(id string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.candidates.Add(1)
		sem <- struct{}{}
		// Taken in the store's order, oldest first, so the oldest stale
		// queued jobs get the sweep's quota.
		mode, took := job.NudgeAny, false
		if quota != nil {
			mode, took = job.NudgeNone, quota.take()
			if took {
				mode = job.NudgeFirst
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			did := r.one(ctx, job.Nudge{ID: id, Now: now, Stale: stale, Queued: mode})
			if took {
				quota.settle(did == resentQueued)
			}
			switch did {
			case resentQueued:
				rep.queued.Add(1)
			case resentRunning:
				rep.running.Add(1)
			case untouched:
				rep.healthy.Add(1)
			case resendFailed:
				rep.errors.Add(1)
			}
		}()
		return nil
	})
	wg.Wait()
	out := Report{Candidates: int(rep.candidates.Load()), Queued: int(rep.queued.Load()), Running: int(rep.running.Load()),
		Healthy: int(rep.healthy.Load()), Errors: int(rep.errors.Load()) + dead.errors, Backlog: max(backlog, 0), DeadLettered: dead.marked}
	r.emit(out)
	r.cfg.Logger.Info("reconciled", "candidates", out.Candidates, "resent_queued", out.Queued, "resent_running", out.Running,
		"healthy", out.Healthy, "errors", out.Errors, "backlog", backlog, "dead_lettered", out.DeadLettered)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return out, fmt.Errorf("reconciler: list unfinished jobs: %w", err)
	}
	return out, nil
}

// quota is how many queued jobs a sweep under a backlog may still re-send.
// A nudge in flight holds a share until it is known whether it re-sent a
// queued job; a later candidate waits for that answer rather than be
// passed over while the quota may still have room.
type quota struct {
	mu              sync.Mutex
	cond            *sync.Cond
	left, tentative int
}

func newQuota(n int) *quota {
	q := &quota{left: n}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// take reports whether the next nudge may re-send a queued job.
func (q *quota) take() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.left == 0 && q.tentative > 0 {
		q.cond.Wait()
	}
	if q.left == 0 {
		return false
	}
	q.left--
	q.tentative++
	return true
}

// settle answers a take: used if the nudge re-sent a queued job, given
// back otherwise.
func (q *quota) settle(used bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tentative--
	if !used {
		q.left++
	}
	q.cond.Broadcast()
}

// resend is what a sweep did with one candidate. Its values are outcomes
// of a sweep, not states of a job.
type resend int

const (
	// untouched: the job needed nothing (touched recently, held by a live
	// worker, or finished meanwhile).
	untouched resend = iota
	// resentQueued and resentRunning: re-sent, found queued or running.
	resentQueued
	resentRunning
	// resendFailed: the nudge or the send failed; the next sweep finds it.
	resendFailed
)

// one nudges and re-sends one candidate.
func (r *Reconciler) one(ctx context.Context, n job.Nudge) resend {
	id := n.ID
	log := r.cfg.Logger.With("job_id", id)
	// The nudge is the check: only a job still stale at this instant is
	// touched, so two sweeps (or a sweep and a worker) never both act.
	j, err := r.cfg.Store.Nudge(ctx, n)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeConflict, job.CodeNotFound:
		return untouched
	default:
		log.Warn("nudging a stale job failed", "err", err)
		return resendFailed
	}
	if err := r.cfg.Queue.Send(ctx, id); err != nil {
		// Nudged but not sent: it looks fresh until After passes again,
		// then the next sweep finds it.
		log.Warn("re-sending a stale job failed", "err", err)
		return resendFailed
	}
	log.Info("stale job re-sent through the claim path", "state", j.State, "nudges", j.Nudges)
	if j.State == job.Queued {
		return resentQueued
	}
	return resentRunning
}

func (r *Reconciler) emit(rep Report) {
	m := r.cfg.Metrics
	m.Emit("ReconcileCandidates", float64(rep.Candidates), "Count", nil)
	m.Emit("Reconciled", float64(rep.Queued), "Count", map[string]string{"State": string(job.Queued)})
	m.Emit("Reconciled", float64(rep.Running), "Count", map[string]string{"State": string(job.Running)})
	m.Emit("ReconcileErrors", float64(rep.Errors), "Count", nil)
	m.Emit("ReconcileBacklog", float64(rep.Backlog), "Count", nil)
	m.Emit("DeadLetteredJobs", float64(rep.DeadLettered), "Count", nil)
}

type marked struct{ marked, errors int }

// markDeadLettered ends, with class dead_lettered, every job whose message
// waits in the dead letter queue and that nobody holds (queued, or running
// with an expired lease, whose dead attempt is written off first, its hold
// charged as cost): SQS moved its message there after
// maxReceiveCount receives, so no worker will come back to it, and a
// polling client would otherwise wait until its deadline. A job held by a
// live worker is left to it; a finished one needs nothing. The dead letter
// itself stays: `aijobs replay --from dlq` brings the job back through the
// claim path.
func (r *Reconciler) markDeadLettered(ctx context.Context, now time.Time) marked {
	var out marked
	dead, err := r.cfg.Queue.DeadLetterIDs(ctx, r.cfg.DeadLetterMax, r.cfg.DeadLetterHide)
	if err != nil {
		r.cfg.Logger.Warn("reading the dead letter queue failed", "err", err)
		out.errors++
	}
	for _, d := range dead {
		id := d.JobID
		// A replay after the dead letter was sent already answered it (a
		// replay killed between re-sending the job and deleting the dead
		// letter leaves both): that job is not marked again.
		err := r.endDeadLettered(ctx, id, now, d.SentAt)
		switch job.ErrorCode(err) {
		case "":
			r.cfg.Logger.Warn("job marked failed: its message is in the dead letter queue", "job_id", id)
			out.marked++
		case job.CodeConflict, job.CodeNotFound:
		default:
			r.cfg.Logger.Warn("marking a dead-lettered job failed", "job_id", id, "err", err)
			out.errors++
		}
	}
	return out
}

// endDeadLettered ends id with class dead_lettered if nobody holds it;
// a dead attempt on the record (job.Job.DeadAttempt) is settled first, as
// a worker would before deciding: its parked outcome recorded, or it is
// written off (pkg/parking).
func (r *Reconciler) endDeadLettered(ctx context.Context, id string, now, sentAt time.Time) error {
	end := job.End{ID: id, Now: now, Class: job.DeadLettered, Detail: "message dead-lettered",
		ExpiresAt: r.cfg.Retention.ExpiresAt(job.Failed, now), NotReplayedSince: sentAt}
	_, err := r.cfg.Store.End(ctx, end)
	cur, refused := job.ConflictJob(err)
	if !refused || !cur.DeadAttempt(now) {
		return err
	}
	how, _, err := parking.Settle(ctx, r.cfg.Store, r.cfg.Parking, cur, now)
	if err != nil {
		return err
	}
	if how == parking.Unparked {
		r.cfg.Logger.Info("a dead attempt's parked outcome was recorded", "job_id", id)
	} else {
		r.cfg.Logger.Warn("a dead attempt was written off: its hold is charged as an estimate", "job_id", id, "charged_cents", cur.Held.String())
	}
	_, err = r.cfg.Store.End(ctx, end)
	return err
}
