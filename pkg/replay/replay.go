// Package replay is the operator's way back after a bad deployment
// (docs/decisions.md, "Replay"): jobs from the dead letter
// queue, or from a query over failed jobs, go back through the SAME claim path
// as every other message. A job that already succeeded is skipped and counted,
// never re-run; a failed one is replayed by an explicit, recorded transition
// with fresh attempts bounded by its remaining budget; a stuck one is simply
// re-sent.
package replay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
)

// Store is the part of the job store a replay drives.
type Store interface {
	Get(ctx context.Context, id string) (job.Job, error)
	Replay(ctx context.Context, r job.Replay) (job.Job, error)
	Failures(ctx context.Context, q job.FailureQuery, each func(job.Failure) error) error
}

// Queue sends job ids to the workers.
type Queue interface {
	Send(ctx context.Context, jobID, tenant string) error
}

// DeadLetters is the dead letter queue, read and emptied by a replay.
type DeadLetters interface {
	ReceiveHidden(ctx context.Context, max int, wait, hide time.Duration) ([]events.SQSMessage, error)
	Delete(ctx context.Context, receiptHandles []string) error
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
}

// Outcome is what a replay did with one job (or dead-lettered message).
type Outcome string

// The outcomes, in the order a summary shows them.
const (
	// Replayed: a failed job went back to queued with fresh attempts and
	// was re-sent.
	Replayed Outcome = "replayed"
	// Resent: a job still queued, or running with an expired lease (its
	// worker died), was re-sent; the claim decides.
	Resent Outcome = "resent"
	// SkippedSucceeded: already succeeded; never run again.
	SkippedSucceeded Outcome = "skipped_succeeded"
	// SkippedRunning: a live worker holds it.
	SkippedRunning Outcome = "skipped_running"
	// SkippedAbandoned: cancelled, or out of deadline or budget by its
	// owner's limits; replay does not override them.
	SkippedAbandoned Outcome = "skipped_abandoned"
	// RefusedBudget: failed, but not one more attempt fits its budget.
	RefusedBudget Outcome = "refused_budget"
	// RefusedTooLarge: failed, but its record has no room left for what
	// another run of attempts adds (job.CodeTooLarge: every attempt leaves
	// a few bytes on it for good, and it is near the store's item limit).
	// No later run can change that, so it is no error to run again.
	RefusedTooLarge Outcome = "refused_too_large"
	// Unreadable: a dead-lettered message that names no job (the worker's
	// own poison messages); left in the queue for a person to read.
	Unreadable Outcome = "unreadable"
	// NotFound: the message names a job that does not exist (or expired).
	NotFound Outcome = "not_found"
	// Errored: the store or the queue failed; nothing was decided. Not a
	// state of the job (job.Failed is one): the job is as it was.
	Errored Outcome = "error"
)

// Outcomes lists every outcome in summary order.
func Outcomes() []Outcome {
	return []Outcome{Replayed, Resent, SkippedSucceeded, SkippedRunning, SkippedAbandoned, RefusedBudget, RefusedTooLarge, Unreadable, NotFound, Errored}
}

// Summary counts outcomes.
type Summary map[Outcome]int

// Total is the number of jobs or messages the replay went through.
func (s Summary) Total() int {
	n := 0
	for _, c := range s {
		n += c
	}
	return n
}

// Config wires a Replayer.
type Config struct {
	Store       Store
	Queue       Queue
	DeadLetters DeadLetters
	// Retention gives a replayed job's record its expiry.
	Retention job.Retention
	// Limits bound what a replay gives: no more fresh attempts than
	// MaxMaxAttempts, no longer a deadline than MaxDeadline.
	Limits job.Limits
	Clock  job.Clock
}

// Options are one run's choices.
type Options struct {
	// DryRun decides every outcome without writing or sending anything
	// (and leaves dead letters where they are).
	DryRun bool
	// Attempts is the fresh attempts a failed job gets (at most what its
	// remaining budget covers); 0 means 3.
	Attempts int
	// Rate bounds the jobs handled per second; 0 means no bound.
	Rate float64
	// Parallel is the jobs in flight at once; 0 means 8.
	Parallel int
	// Progress, when set, is told each outcome as it happens, from
	// several goroutines at once.
	Progress func(id string, o Outcome)
	// Decided, when set, is told each job's outcome with the record it
	// was decided on (a zero Job when none was read: not found, an
	// error), from several goroutines at once: what a dry run needs to
	// say what a replay may cost.
	Decided func(j job.Job, o Outcome)
}

// Replayer replays jobs.
type Replayer struct{ cfg Config }

// New returns a replayer; a nil Clock is the wall clock.
func New(cfg Config) *Replayer {
	if cfg.Clock == nil {
		cfg.Clock = job.SystemClock{}
	}
	return &Replayer{cfg: cfg}
}

// Job decides and does what one job needs, through the claim path.
func (r *Replayer) Job(ctx context.Context, id string, o Options) Outcome {
	j, out := r.decide(ctx, id, o)
	if o.Decided != nil {
		o.Decided(j, out)
	}
	return out
}

// decide is Job, answering the record its outcome was decided on too.
func (r *Replayer) decide(ctx context.Context, id string, o Options) (job.Job, Outcome) {
	j, err := r.cfg.Store.Get(ctx, id)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound:
		return job.Job{}, NotFound
	default:
		return job.Job{}, Errored
	}
	for range 3 {
		now := r.cfg.Clock.Now()
		switch {
		case j.State == job.Succeeded:
			return j, SkippedSucceeded
		case j.State == job.Abandoned:
			return j, SkippedAbandoned
		case j.LeaseLive(now):
			return j, SkippedRunning
		case j.State == job.Queued || j.State == job.Running:
			return j, r.send(ctx, j, Resent, o)
		}
		// Failed: one explicit, recorded transition back to queued.
		n := job.ReplayAttempts(j, o.Attempts)
		if r.cfg.Limits.MaxMaxAttempts > 0 {
			n = min(n, r.cfg.Limits.MaxMaxAttempts)
		}
		if n == 0 {
			return j, RefusedBudget
		}
		if o.DryRun {
			return j, Replayed
		}
		deadline := now.Add(r.window(j)) // as long again as its last run had
		_, err := r.cfg.Store.Replay(ctx, job.Replay{ID: id, Now: now, Attempts: n, Deadline: deadline,
			ExpiresAt: r.cfg.Retention.ExpiresAt(job.Failed, deadline)})
		switch job.ErrorCode(err) {
		case "":
			return j, r.send(ctx, j, Replayed, o)
		case job.CodeConflict:
			j, _ = job.ConflictJob(err) // it changed meanwhile: decide again
			continue
		case job.CodeTooLarge:
			return j, RefusedTooLarge
		}
		return j, Errored
	}
	return j, Errored
}

// window is how long the job's last run had: from its creation or its
// last replay to its deadline, at most the longest deadline allowed (so
// replays never grow it).
func (r *Replayer) window(j job.Job) time.Duration {
	start := j.CreatedAt
	if !j.ReplayedAt.IsZero() {
		start = j.ReplayedAt
	}
	d := j.Deadline.Sub(start)
	if m := r.cfg.Limits.MaxDeadline; m > 0 && d > m {
		d = m
	}
	return max(d, time.Minute)
}

func (r *Replayer) send(ctx context.Context, j job.Job, o Outcome, opts Options) Outcome {
	if opts.DryRun {
		return o
	}
	if err := r.cfg.Queue.Send(ctx, j.ID, j.Tenant); err != nil {
		return Errored
	}
	return o
}

// Failures replays the failed jobs that ended in the query's window (each
// id once; abandoned ones are counted as skipped).
func (r *Replayer) Failures(ctx context.Context, q job.FailureQuery, o Options) (Summary, error) {
	seen := map[string]bool{}
	var ids []string
	err := r.cfg.Store.Failures(ctx, q, func(f job.Failure) error {
		if !seen[f.ID] {
			seen[f.ID] = true
			ids = append(ids, f.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay: query failures: %w", err)
	}
	sum := Summary{}
	r.each(ctx, ids, o, func(id string) Outcome { return r.Job(ctx, id, o) }, sum)
	return sum, ctx.Err()
}

// Jobs replays the jobs ids names (each once), as Failures does for a
// query: the console's replay of a selection or of a failure group.
func (r *Replayer) Jobs(ctx context.Context, ids []string, o Options) (Summary, error) {
	seen := map[string]bool{}
	var unique []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	sum := Summary{}
	r.each(ctx, unique, o, func(id string) Outcome { return r.Job(ctx, id, o) }, sum)
	return sum, ctx.Err()
}

// hideFor keeps the dead letters a sweep received out of sight until it
// ends, so it sees each once.
const hideFor = 15 * time.Minute

// DeadLetters replays every job whose id is in the dead letter queue, up
// to limit messages (0: all), deleting each message once its job is
// handled. Messages it did not delete (unreadable ones, failures, and all
// of a dry run's) are visible again when it returns.
func (r *Replayer) DeadLetters(ctx context.Context, limit int, o Options) (Summary, error) {
	sum := Summary{}
	var mu sync.Mutex
	var done, kept []string
	defer func() {
		// Detached: an interrupted sweep still gives its messages back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, h := range kept {
			_ = r.cfg.DeadLetters.ChangeVisibility(rctx, h, 0)
		}
	}()
	for limit == 0 || sum.Total() < limit {
		want := 10
		if limit > 0 {
			want = min(want, limit-sum.Total())
		}
		msgs, err := r.cfg.DeadLetters.ReceiveHidden(ctx, want, time.Second, hideFor)
		if err != nil {
			return sum, fmt.Errorf("replay: receive dead letters: %w", err)
		}
		if len(msgs) == 0 {
			break
		}
		bodies := map[string]events.SQSMessage{}
		var keys []string
		for _, m := range msgs {
			bodies[m.MessageId] = m
			keys = append(keys, m.MessageId)
		}
		r.each(ctx, keys, o, func(key string) Outcome {
			m := bodies[key]
			out := Unreadable
			if msg, ok := job.ParseQueueMessage(m.Body); ok && job.ValidID(msg.JobID) {
				out = r.Job(ctx, msg.JobID, o)
			}
			mu.Lock()
			if out != Errored && out != Unreadable && !o.DryRun {
				done = append(done, m.ReceiptHandle)
			} else {
				kept = append(kept, m.ReceiptHandle)
			}
			mu.Unlock()
			return out
		}, sum)
		if len(done) > 0 {
			if err := r.cfg.DeadLetters.Delete(ctx, done); err != nil {
				return sum, fmt.Errorf("replay: delete handled dead letters: %w", err)
			}
			done = done[:0]
		}
		if ctx.Err() != nil {
			return sum, ctx.Err()
		}
	}
	return sum, nil
}

// each runs do over keys, o.Parallel at a time and at most o.Rate a
// second, counting outcomes into sum and reporting them to o.Progress.
func (r *Replayer) each(ctx context.Context, keys []string, o Options, do func(string) Outcome, sum Summary) {
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = 8
	}
	var tick <-chan time.Time
	if every := time.Duration(float64(time.Second) / o.Rate); o.Rate > 0 && every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for _, k := range keys {
		if tick != nil {
			select {
			case <-ctx.Done():
			case <-tick:
			}
		}
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out := do(k)
			mu.Lock()
			sum[out]++
			mu.Unlock()
			if o.Progress != nil {
				o.Progress(k, out)
			}
		}()
	}
	wg.Wait()
}
