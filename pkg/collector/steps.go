package collector

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// collect opens a batch of the jobs waiting in l when a full batch waits
// or the first has waited the lane's window, and as many as the provider
// takes at least (MinJobs), and submits it. The batch
// record names its jobs before any is collected, so a run that dies
// between the two is carried on by the next (submit collects what is
// still waiting).
func (c *Collector) collect(ctx context.Context, l lane) error {
	waiting, err := c.store.Enlisted(ctx, l.key, l.rung.MaxJobs)
	if err != nil || len(waiting) == 0 {
		return err
	}
	waiting, werr := c.stillWaiting(ctx, waiting)
	if err := c.open(ctx, l, waiting); err != nil || werr != nil {
		return errors.Join(werr, err)
	}
	return nil
}

// open opens a batch of waiting when the lane is due one, and submits it.
func (c *Collector) open(ctx context.Context, l lane, waiting []job.Enlistee) error {
	if len(waiting) == 0 {
		return nil
	}
	now := c.clock.Now()
	if len(waiting) < l.rung.MinJobs {
		return nil // fewer than the provider takes: they wait, or are handed back in time
	}
	if len(waiting) < l.rung.MaxJobs && l.rung.Window > 0 && now.Sub(waiting[0].At) < l.rung.Window {
		return nil
	}
	b := job.BatchRecord{ID: c.newID(), Lane: l.key, Provider: l.rung.Provider, Model: l.rung.Model,
		State: job.Collecting, CreatedAt: now, UpdatedAt: now}
	for _, w := range waiting {
		b.Jobs = append(b.Jobs, job.BatchJob{ID: w.ID})
	}
	if err := c.batches.OpenBatch(ctx, b); err != nil {
		return err
	}
	return c.submit(ctx, l, b)
}

// stillWaiting is waiting without the jobs that can wait no longer: one
// whose lease ends within a collector period is handed back to the queue
// (a faster lane may still meet its deadline), and one cancelled while it
// waited is settled (its hold returned: nothing was billed). Either
// leaves the lane with its lease.
func (c *Collector) stillWaiting(ctx context.Context, waiting []job.Enlistee) ([]job.Enlistee, error) {
	now := c.clock.Now()
	var out []job.Enlistee
	var errs []error
	for _, w := range waiting {
		j, err := c.store.Get(ctx, w.ID)
		switch {
		case err != nil:
			errs = append(errs, err) // left to wait for the next run; the others go on
		case !j.InBatchLane() || j.Enlisted == "":
			// The index lags the record: it left the lane already.
		case j.State != job.Running:
			errs = append(errs, c.release(ctx, j, j.LeaseOwner, j.Held, "cancelled while it waited for a batch"))
		case !j.LeaseUntil.After(now.Add(c.every)):
			errs = append(errs, c.handBackUnsent(ctx, j, "no batch in time for the job's deadline"))
		default:
			out = append(out, w)
		}
	}
	return out, errors.Join(errs...)
}

// release hands job j back from the batch lane, under owner, returning
// held (nothing was billed), and re-sends its message (it went when the
// job was enlisted). A job no longer running (cancelled) is only settled:
// the store refuses the release and returns the hold with the lease.
func (c *Collector) release(ctx context.Context, j job.Job, owner string, held job.Nanocents, why string) error {
	f := finish.Of{Job: j, Owner: owner, Now: job.NextUpdate(j.UpdatedAt, c.clock.Now()), Settlement: job.Settlement{Held: held}}
	if _, err := f.HandBack(job.Timeout, why).Apply(ctx, c.store); err != nil {
		return refusedIsSettled(err)
	}
	c.log.Info("a job handed back from the batch lane", "job_id", j.ID, "why", why)
	return c.queue.Send(ctx, j.ID, j.Tenant)
}

// handBackUnsent returns job j, which no batch was sent for, to the queue
// uncounted (job.Defer): its stay in the lane called nothing, so it was
// no attempt, and a job on its last attempt is not ended for a wait the
// lane could not serve. Its hold is returned and its message re-sent. A
// defer refused with the job queued landed before (its answer lost) and
// re-sends all the same (a second message costs a claim); one refused
// because the job was cancelled meanwhile is settled as a cancel.
func (c *Collector) handBackUnsent(ctx context.Context, j job.Job, why string) error {
	d := job.Defer{ID: j.ID, Owner: j.LeaseOwner, Now: job.NextUpdate(j.UpdatedAt, c.clock.Now()), Held: j.Held,
		Class: job.CapacityUnavailable, Detail: why}
	_, err := c.store.Defer(ctx, d)
	if cur, ok := job.ConflictJob(err); ok {
		switch {
		case cur.State == job.Queued:
			err = nil
		case cur.State.Terminal() && cur.LeaseOwner == j.LeaseOwner:
			return c.release(ctx, cur, j.LeaseOwner, j.Held, "cancelled while it was handed back")
		default:
			return nil // another holds it now
		}
	}
	if err != nil {
		return err
	}
	c.log.Info("a job handed back from the batch lane, uncounted", "job_id", j.ID, "why", why)
	return c.queue.Send(ctx, j.ID, j.Tenant)
}

// submit collects b's jobs that still wait (a job cancelled or handed
// back meanwhile is left out), seals b with them, and sends it. A job
// whose membership cannot be known now (its read failed) stops the
// submit: left out, a job the batch did collect would wait for a batch
// that never asks for it; the next run carries on. Fewer left than the
// provider takes (MinJobs) are never sent: b is closed unsent (putOff).
func (c *Collector) submit(ctx context.Context, l lane, b job.BatchRecord) error {
	members, err := c.members(ctx, l, b)
	if err != nil {
		return err
	}
	fewest := max(1, l.rung.MinJobs) // never an empty batch
	if len(members) < fewest {
		return c.putOff(ctx, b, members)
	}
	var reqs []model.Request
	var in []job.BatchJob
	var collected []job.Job
	for _, m := range members {
		j, ok, err := c.collectInto(ctx, b, m)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		j.Input = m.Input            // members loaded it (a stored one is not on the record)
		r, _ := c.request(ctx, l, j) // members read it
		reqs = append(reqs, r)
		in = append(in, job.BatchJob{ID: j.ID, Held: j.Held})
		collected = append(collected, j)
		b.HandBackAt = earlier(b.HandBackAt, j.LeaseUntil)
	}
	if len(in) < fewest {
		return c.putOff(ctx, b, collected) // a collect lost to a cancel meanwhile
	}
	b.Jobs, b.State = in, job.Sealed
	b.UpdatedAt = c.clock.Now()
	b.SealedAt = b.UpdatedAt
	// Sealed before it is sent: a submit whose answer is lost may have
	// landed, and the provider (deduplicating on b's id) keeps the jobs
	// of the first, so the next run must send the same ones, not decide
	// again.
	if err := c.batches.SaveBatch(ctx, b); err != nil {
		return err
	}
	return c.send(ctx, l, b, reqs, false)
}

// members are the jobs of b's record that are b's or may still be
// collected into it, each with a valid stored input. One whose input is
// not valid is handed back (nothing was billed; a worker ends it).
func (c *Collector) members(ctx context.Context, l lane, b job.BatchRecord) ([]job.Job, error) {
	var out []job.Job
	for _, bj := range b.Jobs {
		j, ok, err := c.member(ctx, b, bj.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := c.loadInput(ctx, &j); err != nil && !errors.Is(err, errInputLost) {
			return nil, err // the payload store did not answer: the next run submits
		}
		r, err := c.request(ctx, l, j)
		why := ""
		switch {
		case err != nil:
			why = "its stored input is not valid"
		case (r.Texts != nil) != l.rung.Embeds:
			// Its route changed since it was created: sent, it would mix
			// a chat and an embedding request in one batch, which a
			// provider takes on one endpoint only.
			why = "its input is not of its lane's kind"
		case r.Texts != nil && !l.rung.Takes.BatchEmbeddings:
			why = "its lane's provider takes no embeddings in batches" // the create refuses it; a route changed since
		}
		if why != "" {
			c.log.Warn("a collected job cannot be batched; it is handed back", "job_id", j.ID, "why", why)
			if err := c.release(ctx, j, j.LeaseOwner, j.Held, why); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// putOff closes b unsent: fewer of its jobs are left than its provider
// takes in a batch (Bedrock refuses a job of fewer records than its
// quota), and sent they would be refused, or billed as a batch the lane
// does not allow. A job b collected already is handed back uncounted
// (handBackUnsent: nothing was sent), so its worker plans again with the
// time left; one still waiting stays in the lane for a later batch.
// Closed only once every collected one is back: a failed hand-back
// leaves b for the next run's submit, which reads its jobs again.
func (c *Collector) putOff(ctx context.Context, b job.BatchRecord, members []job.Job) error {
	owner := job.BatchOwner(b.ID)
	var errs []error
	for _, j := range members {
		if j.Batch == b.ID && j.LeaseOwner == owner {
			errs = append(errs, c.handBackUnsent(ctx, j, "its batch fell below the fewest jobs its provider takes"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(members) > 0 {
		c.log.Info("a batch below its provider's minimum was not sent", "batch", b.ID, "jobs", len(members), "lane", b.Lane)
	}
	b.Jobs, b.State, b.UpdatedAt = nil, job.Settled, c.clock.Now()
	return c.batches.SaveBatch(ctx, b)
}

// resend sends sealed batch b again: its jobs' requests are read from
// their records, whatever became of them since (a job cancelled meanwhile
// is still asked for: the provider may have it).
func (c *Collector) resend(ctx context.Context, l lane, b job.BatchRecord) error {
	reqs := make([]model.Request, 0, len(b.Jobs))
	for _, bj := range b.Jobs {
		j, err := c.read(ctx, bj.ID)
		if err != nil {
			return err
		}
		r, err := c.request(ctx, l, j)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	return c.send(ctx, l, b, reqs, true)
}

// resubmitter is a batcher that keeps no key on a batch (Anthropic's):
// what an earlier send of a sealed batch made, its answer never recorded,
// is found by when it was made. The others find it by b's id.
type resubmitter interface {
	ResubmitBatch(ctx context.Context, key string, sealed time.Time, taken []string, reqs []model.Request) (string, error)
}

// send submits sealed batch b as reqs under b's id, again when an
// earlier run may have sent it, and records the provider's id.
func (c *Collector) send(ctx context.Context, l lane, b job.BatchRecord, reqs []model.Request, again bool) error {
	bt, err := c.batcher(l)
	if err != nil {
		return err
	}
	if r, ok := bt.(resubmitter); ok && again {
		sealed := b.SealedAt
		if sealed.IsZero() {
			sealed = b.CreatedAt // sealed before the record kept when: its opening is earlier
		}
		var taken []string
		if taken, err = c.taken(ctx); err != nil {
			return err
		}
		b.ProviderID, err = r.ResubmitBatch(ctx, b.ID, sealed, taken, reqs)
	} else {
		b.ProviderID, err = bt.SubmitBatch(ctx, b.ID, reqs)
	}
	if class, detail, ok := refused(err, again); ok {
		return c.refuse(ctx, b, class, detail)
	}
	if err != nil {
		return err
	}
	b.State, b.UpdatedAt = job.Submitted, c.clock.Now()
	c.log.Info("batch submitted", "batch", b.ID, "provider_batch", b.ProviderID, "jobs", len(reqs), "lane", b.Lane)
	return c.batches.SaveBatch(ctx, b)
}

// taken is the provider ids of the open batches: never another's to
// take for a send whose answer was lost.
func (c *Collector) taken(ctx context.Context) ([]string, error) {
	open, err := c.batches.Batches(ctx)
	var ids []string
	for _, o := range open {
		if o.ProviderID != "" {
			ids = append(ids, o.ProviderID)
		}
	}
	return ids, err
}

// request is job j's request in lane l, its input read from the payload
// store when the record points there.
func (c *Collector) request(ctx context.Context, l lane, j job.Job) (model.Request, error) {
	if err := c.loadInput(ctx, &j); err != nil && !errors.Is(err, errInputLost) {
		return model.Request{}, err
	}
	var input job.Input
	if err := json.Unmarshal(j.Input, &input); err != nil {
		return model.Request{}, err
	}
	req := model.RequestFor(j.ID, l.rung, input)
	req.Lane = job.Batch
	return req, nil
}

// member is job id of batch b as the record has it, and true when it is
// b's already or still waits in b's lane to be collected into it; false
// when it is not b's (cancelled, handed back, or gone). One cancelled
// after b collected it is settled, its hold returned: nothing was
// submitted for it. An error is a membership not known now.
func (c *Collector) member(ctx context.Context, b job.BatchRecord, id string) (job.Job, bool, error) {
	owner := job.BatchOwner(b.ID)
	j, err := c.read(ctx, id)
	switch {
	case err != nil:
		return j, false, err
	case j.Batch == b.ID && j.LeaseOwner == owner && j.State != job.Running:
		return j, false, c.release(ctx, j, owner, j.Held, "cancelled before its batch was submitted")
	case j.Batch == b.ID && j.LeaseOwner == owner:
		// b's already: only its lease is left to check.
	case j.Enlisted != b.Lane || j.State != job.Running || !j.InBatchLane():
		return j, false, nil // not b's
	}
	if !j.LeaseUntil.After(c.clock.Now().Add(c.every)) {
		return j, false, c.handBackUnsent(ctx, j, "its batch was not submitted in time for the job's deadline")
	}
	return j, true, nil
}

// collectInto collects member j into b unless it is b's already; false
// when it is not b's after all (the collect was refused, its answer lost
// or not).
func (c *Collector) collectInto(ctx context.Context, b job.BatchRecord, j job.Job) (job.Job, bool, error) {
	if j.Batch == b.ID {
		return j, true, nil
	}
	got, err := c.store.Collect(ctx, job.Collect{ID: j.ID, Owner: j.LeaseOwner, Now: c.clock.Now(), Batch: b.ID})
	if err != nil {
		// A collect whose answer was lost may have landed: read again.
		if got, err = c.read(ctx, j.ID); err != nil {
			return got, false, err
		}
		return got, got.Batch == b.ID && got.LeaseOwner == job.BatchOwner(b.ID) && got.State == job.Running, nil
	}
	return got, true, nil
}

// readTries bounds read's tries: a submit needs every job of its batch
// read in one run, so one failed read is tried again at once rather than
// put the whole batch off to the next run.
const readTries = 3

// read is job id's record, its read tried again while the store answers
// unavailable.
func (c *Collector) read(ctx context.Context, id string) (job.Job, error) {
	for try := 1; ; try++ {
		j, err := c.store.Get(ctx, id)
		if err == nil || try == readTries || job.ErrorCode(err) != job.CodeUnavailable || ctx.Err() != nil {
			return j, err
		}
	}
}

// poll settles b once its provider says it ended, and meanwhile hands
// back the jobs that can no longer wait for it.
func (c *Collector) poll(ctx context.Context, l lane, b job.BatchRecord) error {
	bt, err := c.batcher(l)
	if err != nil {
		return err
	}
	ended, err := bt.BatchEnded(ctx, b.ProviderID)
	if err != nil {
		return err
	}
	if !ended {
		if !b.HandBackAt.IsZero() && b.HandBackAt.After(c.clock.Now().Add(c.every)) {
			return nil // no job of it is due back before the next run
		}
		return c.handBack(ctx, b)
	}
	var errs []error
	answered, settled := map[string]bool{}, map[string]bool{}
	err = bt.BatchResults(ctx, b.ProviderID, func(id string, resp model.Response, callErr error) error {
		answered[id] = true
		if err := c.recordResult(ctx, l, b, result{id: id, resp: resp, err: callErr}); err != nil {
			errs = append(errs, err)
		} else {
			settled[id] = true
		}
		return nil
	})
	if err == nil {
		errs = append(errs, c.unanswered(ctx, b, answered))
	}
	if err = errors.Join(append(errs, err)...); err != nil {
		// Carried on by the next run (each settlement lands once), for the
		// jobs not settled yet: the record keeps only those, so a large
		// batch's settling makes progress run by run, whatever fails.
		if len(settled) > 0 {
			var left []job.BatchJob // a new slice: b's may be its store's
			for _, bj := range b.Jobs {
				if !settled[bj.ID] {
					left = append(left, bj)
				}
			}
			b.Jobs = left
			b.UpdatedAt = c.clock.Now()
			err = errors.Join(err, c.batches.SaveBatch(ctx, b))
		}
		return err
	}
	b.State, b.UpdatedAt = job.Settled, c.clock.Now()
	c.log.Info("batch settled", "batch", b.ID, "jobs", len(b.Jobs))
	return c.batches.SaveBatch(ctx, b)
}

// handBack releases each job of b whose lease ends before b does: it goes
// back to the queue for a faster lane while its deadline allows. Its
// result, if it still comes, is settled as billed (recordResult).
func (c *Collector) handBack(ctx context.Context, b job.BatchRecord) error {
	owner, now := job.BatchOwner(b.ID), c.clock.Now()
	var errs []error
	var next time.Time // the earliest lease end of the jobs it keeps
	for _, bj := range b.Jobs {
		j, err := c.store.Get(ctx, bj.ID)
		switch {
		case err != nil:
			errs = append(errs, err)
			next = now // unknown: read again next run
		case j.LeaseOwner != owner || j.State != job.Running:
		case j.LeaseUntil.After(now.Add(c.every)):
			next = earlier(next, j.LeaseUntil)
		default:
			errs = append(errs, c.release(ctx, j, owner, bj.Held, "the batch was not done in time for the job's deadline"))
		}
	}
	if next.IsZero() {
		next = noneDue // it keeps no job
	}
	if !next.Equal(b.HandBackAt) {
		b.HandBackAt, b.UpdatedAt = next, now
		errs = append(errs, c.batches.SaveBatch(ctx, b))
	}
	return errors.Join(errs...)
}

// noneDue is the HandBackAt of a batch that keeps no job to hand back.
var noneDue = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// earlier is the earlier of a and b, a zero one being no time at all.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// unanswered hands back each job of the ended batch b that its provider
// gave no result (a batch that failed validation has none): nothing was
// generated for it, and it goes back to the queue for another lane while
// its deadline allows.
func (c *Collector) unanswered(ctx context.Context, b job.BatchRecord, answered map[string]bool) error {
	owner := job.BatchOwner(b.ID)
	var errs []error
	for _, bj := range b.Jobs {
		if answered[bj.ID] {
			continue
		}
		j, err := c.store.Get(ctx, bj.ID)
		if err != nil || j.LeaseOwner != owner {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, c.release(ctx, j, owner, bj.Held, "the provider's batch ended without the job's result"))
	}
	return errors.Join(errs...)
}

// recordResult records job id's result in batch b through the same finishing
// transitions as any attempt, with b's lease (job.BatchOwner): an answer
// succeeds, a failure is released or ended as job.AfterError decides. A
// job no longer b's (handed back, cancelled, written off) is still
// settled: the store refuses the finish and keeps its cost (a written-off
// stay's cost replacing its estimate), at the batch price.
func (c *Collector) recordResult(ctx context.Context, l lane, b job.BatchRecord, r result) error {
	id, resp, callErr := r.id, r.resp, r.err
	i := slices.IndexFunc(b.Jobs, func(bj job.BatchJob) bool { return bj.ID == id })
	if i < 0 {
		return nil // settled by an earlier run (poll keeps only the jobs left), or never the batch's
	}
	j, err := c.store.Get(ctx, id)
	if err != nil {
		return err
	}
	owner, now := job.BatchOwner(b.ID), job.NextUpdate(j.UpdatedAt, c.clock.Now())
	class, usage := model.Classify(callErr)
	if callErr == nil {
		usage = resp.Usage
	}
	if usage.Estimated {
		usage.InputTokens = max(usage.InputTokens, promptCeiling(j))
	}
	set := job.Settlement{Cost: usage.Cost(l.rung.Price), Saved: usage.Saved(l.rung),
		Estimated: usage.Estimated, Held: b.Jobs[i].Held, Ran: now.Sub(b.CreatedAt), Lane: job.Batch}
	if j.LeaseOwner == owner {
		set.Attempt = j.Attempts // the stay's attempt (once it is not the batch's, another may have begun)
	}
	if j.LeaseOwner != owner && !slices.Contains(j.WrittenOff, owner) {
		set.Held = 0 // handed back: its hold was returned then
	}
	f := finish.Of{Job: j, Owner: owner, Now: now, Settlement: set, Retention: c.retention}
	if callErr == nil && conforms(j, resp) {
		return c.succeed(ctx, l, f, resp)
	}
	if callErr == nil {
		class = job.InvalidOutput // paid (set) all the same
	}
	return c.fail(ctx, f, class)
}

// promptCeiling is the most job j's prompt may count: what an answer
// that came without its counts is billed for its input
// (model.BatchUnreported), as a call's would be.
func promptCeiling(j job.Job) int64 {
	if j.InputRef != nil && len(j.Input) == 0 {
		// Its stored JSON is longer than its content, and each message's
		// 8 tokens of ceiling take at least 30 bytes of it: no read needed.
		return j.InputRef.Size
	}
	var in job.Input
	if json.Unmarshal(j.Input, &in) != nil {
		return 0
	}
	return in.Ceiling() // an embedding job's its texts'
}

// result is one job's outcome in a batch, as the provider reports it.
type result struct {
	id   string
	resp model.Response
	err  error
}
