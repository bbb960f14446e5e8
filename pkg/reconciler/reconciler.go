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
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/finish"
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
	Send(ctx context.Context, jobID, tenant string) error
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
	// has a backlog (oldest first among the sweep's head, each at most once
	// while it lasts), so a lost message is re-sent within
	// floor(older lost-or-waiting jobs / ResendMax) + 1 sweeps (see
	// ExamineMax for when) without a backlog ever growing by more than
	// ResendMax a sweep; 0 means 100. With no backlog every stale queued
	// job a sweep examines is re-sent.
	ResendMax int
	// ExamineMax bounds the candidates one sweep examines, one conditional
	// write (and at most one send) each, whatever the backlog: when there
	// are more, the ExamineMax/2 oldest (where the queued quota goes), and
	// the rest of the budget to a rotation whose passes examine every
	// other candidate, a pass lasting at most ceil((candidates -
	// ExamineMax/2) / (ExamineMax - ExamineMax/2)) sweeps (docs/decisions.md,
	// "Reconciler under a backlog"). 0 means 2,000, or 4 x ResendMax if
	// that is more, so the oldest half always has room for the quota and
	// as many again.
	ExamineMax int
	// Parking is where a dead attempt's outcome is looked for before the
	// attempt is written off (pkg/parking); nil parks nothing.
	Parking parking.Lot
	// SpendFirst, with tenant spend limits, tells a dead attempt that
	// never called from one that may have (docs/spend.md, "Crash
	// windows"), and settles its holds; nil: every dead attempt is
	// charged its hold, and its spend holds stay counted until their
	// period ends.
	SpendFirst *parking.SpendFirst
}

// Reconciler runs one sweep per call of Run.
type Reconciler struct {
	cfg Config
	// origin is where, in id order, the rotation's passes begin (rotate):
	// random, so that cold starts in a row, each a new reconciler, still
	// examine different candidates rather than the same ones each time.
	origin string
	// mu guards the state sweeps keep for the next (plan): pass, the
	// candidates the rotation's pass has yet to examine (rotate), and
	// nudged, the candidates known to be queued and nudged before
	// (learn). A new reconciler (a cold Lambda) starts with neither.
	mu     sync.Mutex
	pass   map[string]bool
	nudged map[string]bool
}

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
	if cfg.ExamineMax <= 0 {
		cfg.ExamineMax = max(2000, 4*cfg.ResendMax)
	}
	cfg.ExamineMax = max(cfg.ExamineMax, 2) // a head and a rotation
	if cfg.DeadLetterMax <= 0 {
		cfg.DeadLetterMax = 500
	}
	if cfg.DeadLetterHide <= 0 {
		cfg.DeadLetterHide = 30 * time.Second
	}
	return &Reconciler{cfg: cfg, origin: job.NewID("reconciler", strconv.FormatUint(rand.Uint64(), 36)), nudged: map[string]bool{}}
}

type noMetrics struct{}

func (noMetrics) Emit(string, float64, string, map[string]string) {}

// Report is what one sweep did.
type Report struct {
	// Candidates are unfinished jobs created before the staleness horizon.
	Candidates int `json:"candidates"`
	// Examined are the candidates nudged (one conditional write each):
	// all of them, or ExamineMax when there are more.
	Examined int `json:"examined"`
	// Queued and Running count the jobs re-sent, by the state they were
	// found in.
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// Healthy are examined candidates that turned out to be fine (touched
	// recently, held by a live worker, finished meanwhile, or queued and
	// left to the backlog).
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
	s := &sweep{r: r, ctx: ctx, now: now, stale: now.Add(-r.cfg.After), sem: make(chan struct{}, r.cfg.Parallel)}
	backlog, err := r.cfg.Queue.Backlog(ctx)
	if err != nil {
		// Unknown: assume one rather than risk doubling it.
		r.cfg.Logger.Warn("reading the queue's backlog failed; queued jobs are re-sent as under a backlog", "err", err)
		backlog = -1
	}
	dead := r.markDeadLettered(ctx, now)
	if backlog != 0 {
		s.quota = newQuota(r.cfg.ResendMax) // with none, every stale queued job lost its message
	}
	ids, err := r.candidates(ctx, s.stale)
	head, rotation := r.plan(ids, s.quota != nil)
	for _, id := range head {
		if ctx.Err() != nil {
			break
		}
		s.examine(id, true)
	}
	for _, id := range rotation {
		if ctx.Err() != nil {
			break
		}
		s.examine(id, false)
	}
	s.wg.Wait()
	out := Report{Candidates: len(ids), Examined: int(s.examined.Load()), Queued: int(s.queued.Load()), Running: int(s.running.Load()),
		Healthy: int(s.healthy.Load()), Errors: int(s.errors.Load()) + dead.errors, Backlog: max(backlog, 0), DeadLettered: dead.marked}
	r.emit(out)
	r.cfg.Logger.Info("reconciled", "candidates", out.Candidates, "examined", out.Examined, "resent_queued", out.Queued,
		"resent_running", out.Running, "healthy", out.Healthy, "errors", out.Errors, "backlog", backlog, "dead_lettered", out.DeadLettered)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return out, fmt.Errorf("reconciler: list unfinished jobs: %w", err)
	}
	return out, nil
}

// candidates lists the unfinished jobs created before stale, oldest first
// (the store's order). It reads the whole keys-only index: the store's
// Unfinished has no limit, and an index entry is an id, a shard and a
// time, about 64 bytes, so DynamoDB answers some 16,000 of them a Query
// page (a page stops at 1 MB,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html):
// what grows with the backlog here is one Query per 1 MB of ids, not a
// write per job (docs/decisions.md, "Reconciler under a backlog").
func (r *Reconciler) candidates(ctx context.Context, stale time.Time) ([]string, error) {
	var ids []string
	err := r.cfg.Store.Unfinished(ctx, stale, func(id string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	return ids, err
}

// plan picks the candidates a sweep examines, at most ExamineMax of them
// (docs/decisions.md, "Reconciler under a backlog"): the head, examined
// first and oldest first, where the queued quota goes, then the
// rotation's share of the rest (rotate). When they all fit, the head is
// every candidate; when
// not, it is the ExamineMax/2 oldest. Under a backlog the head passes over
// the jobs this reconciler knows were nudged while queued (learn): the
// quota could not take them, and they are left to the rotation like any
// job that is not among the oldest.
func (r *Reconciler) plan(ids []string, underBacklog bool) (head, rotation []string) {
	limit := r.cfg.ExamineMax
	if len(ids) > limit {
		limit /= 2
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	known := make(map[string]bool, len(r.nudged)) // forget jobs no longer candidates
	var rest []string
	for _, id := range ids {
		nudged := r.nudged[id]
		if nudged {
			known[id] = true
		}
		if len(head) < limit && !(underBacklog && nudged) {
			head = append(head, id)
		} else {
			rest = append(rest, id)
		}
	}
	r.nudged = known
	return head, r.rotate(rest, r.cfg.ExamineMax-len(head))
}

// rotate picks up to want of rest (the candidates outside the head) for
// the rotation's share of a sweep. A pass of the rotation examines, want
// a sweep, every candidate that was outside the head when the pass began,
// in id order from this reconciler's origin (ids are hashes, so the order
// is unrelated to age); a member examined in the head meanwhile, or no
// longer a candidate, is done with. The next pass begins once none is
// left. So a pass lasts at most ceil(P / want) sweeps, P the candidates
// it began with, and a candidate that joins meanwhile waits for the next.
// The caller holds r.mu.
func (r *Reconciler) rotate(rest []string, want int) []string {
	if len(rest) <= want {
		r.pass = nil // every one of them, this sweep
		return rest
	}
	slices.Sort(rest)
	for range 2 { // a pass that ended with nothing left for this sweep, then a new one
		if len(r.pass) == 0 {
			r.pass = make(map[string]bool, len(rest))
			for _, id := range rest {
				r.pass[id] = true
			}
		}
		at, _ := slices.BinarySearch(rest, r.origin)
		out := make([]string, 0, want)
		left := make(map[string]bool, len(r.pass))
		for i := range rest {
			id := rest[(at+i)%len(rest)]
			switch {
			case !r.pass[id]:
			case len(out) < want:
				out = append(out, id)
			default:
				left[id] = true
			}
		}
		r.pass = left
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// learn remembers j if it is queued and was nudged before: while the
// queue has a backlog, the quota never takes it (job.NudgeFirst), so the
// head need not spend an examination on it. Nudges only grow, so the fact
// stays true until the job leaves the candidates.
func (r *Reconciler) learn(j job.Job) {
	if j.State != job.Queued || j.Nudges == 0 {
		return
	}
	r.mu.Lock()
	r.nudged[j.ID] = true
	r.mu.Unlock()
}

// sweep is one run's examinations in flight and their counts.
type sweep struct {
	r          *Reconciler
	ctx        context.Context
	now, stale time.Time
	// quota is nil with no backlog: every stale queued job may be re-sent.
	quota                                      *quota
	sem                                        chan struct{}
	wg                                         sync.WaitGroup
	examined, queued, running, healthy, errors atomic.Int64
}

// examine nudges and re-sends id in the background, once a slot of
// Parallel is free. Under a backlog, a candidate of the head takes a share
// of the quota in the order examine is called (oldest first) and may be
// re-sent if queued and never nudged; any candidate may be re-sent if its
// worker died.
func (s *sweep) examine(id string, head bool) {
	s.sem <- struct{}{}
	mode, took := job.NudgeAny, false
	if s.quota != nil {
		mode = job.NudgeNone
		if head {
			if took = s.quota.take(); took {
				mode = job.NudgeFirst
			}
		}
	}
	s.examined.Add(1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.sem }()
		did := s.r.one(s.ctx, job.Nudge{ID: id, Now: s.now, Stale: s.stale, Queued: mode})
		if took {
			s.quota.confirm(did == resentQueued)
		}
		switch did {
		case resentQueued:
			s.queued.Add(1)
		case resentRunning:
			s.running.Add(1)
		case untouched:
			s.healthy.Add(1)
		case resendFailed:
			s.errors.Add(1)
		}
	}()
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

// confirm answers a take: used if the nudge re-sent a queued job, given
// back otherwise.
func (q *quota) confirm(used bool) {
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
		r.learn(j)
	case job.CodeConflict, job.CodeNotFound:
		if cur, ok := job.ConflictJob(err); ok {
			r.learn(cur)
		}
		return untouched
	default:
		log.Warn("nudging a stale job failed", "err", err)
		return resendFailed
	}
	if err := r.cfg.Queue.Send(ctx, id, j.Tenant); err != nil {
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
	end := finish.Of{Job: job.Job{ID: id}, Now: now, Retention: r.cfg.Retention}.End(job.DeadLettered, "message dead-lettered")
	end.End.NotReplayedSince = sentAt
	_, err := end.Apply(ctx, r.cfg.Store)
	cur, refused := job.ConflictJob(err)
	if !refused || !cur.DeadAttempt(now) {
		return err
	}
	look, err := r.cfg.SpendFirst.Look(ctx, cur)
	if err != nil && now.Sub(cur.LeaseUntil) < parking.Patience {
		return err // the next run looks again
	}
	how, after, err := parking.Recover(ctx, r.cfg.Store, r.cfg.Parking, parking.Dead{Job: cur, Now: now, Void: look.Void})
	if err != nil {
		return err
	}
	if look.Promised && how != parking.Returned {
		if err := r.cfg.SpendFirst.Settle(ctx, look.Settles(how, after.Cost-cur.Cost)); err != nil {
			r.cfg.Logger.Warn("settling a dead attempt's spend failed; its hold stays counted until the period ends", "job_id", id, "err", err)
		}
	}
	switch how {
	case parking.Voided:
		r.cfg.Logger.Info("a dead attempt that never called was written off, its hold returned", "job_id", id)
	case parking.Unparked:
		r.cfg.Logger.Info("a dead attempt's parked outcome was recorded", "job_id", id)
	case parking.Returned:
		r.cfg.Logger.Warn("a job no collector took from the batch lane was given back, its hold returned", "job_id", id)
	default:
		r.cfg.Logger.Warn("a dead attempt was written off: its hold is charged as an estimate", "job_id", id, "charged_cents", cur.Held.String())
	}
	_, err = end.Apply(ctx, r.cfg.Store)
	return err
}
