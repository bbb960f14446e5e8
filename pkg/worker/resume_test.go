package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// keeper is the scripted provider as one that keeps generations by id
// (OpenAI's background responses): a call may resume one.
type keeper struct{ *provider }

func (keeper) Resumes() bool { return true }

// withKeeper makes the fixture's provider a keeper.
func withKeeper(f *fixture) func(*worker.Config) {
	return func(c *worker.Config) { c.Providers = map[string]model.Provider{"p": keeper{f.prov}} }
}

// deadAttempt makes a record whose attempt "dead" started generation
// resp_1 after paying 5 on earlier rungs, holding 100, and died: its
// lease ran out a minute ago.
func deadAttempt(j *job.Job) {
	j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "dead", job.Millis(time.Now().Add(-time.Minute))
	j.Reserve, j.Held = 100, 100
	j.Pending = &job.Pending{Owner: "dead", Provider: "p", Model: "m1", ID: "resp_1", Held: 100, Paid: 5}
}

// resumable scripts a keeper: a call resuming resp_1 answers gone or
// with a 700-token generation; a fresh call generates 900 tokens.
func resumable(gone bool, resumes, fresh *atomic.Int32) func(context.Context, model.Request, int) (model.Response, error) {
	return func(_ context.Context, r model.Request, _ int) (model.Response, error) {
		if r.Resume != "" {
			resumes.Add(1)
			if gone || r.Resume != "resp_1" {
				return model.Response{}, &model.Error{Class: job.Internal, Detail: "gone", Err: model.ErrGone}
			}
			return model.Response{Output: "kept", Model: "m1", Usage: model.Usage{InputTokens: 700}}, nil
		}
		fresh.Add(1)
		return model.Response{Output: "new", Model: "m1", Usage: model.Usage{InputTokens: 900}}, nil
	}
}

// A worker that takes over a job whose dead attempt left a generation
// with the provider fetches it instead of generating again, and the
// generation's cost (plus what the dead attempt paid before it) replaces
// the estimate its write-off charged: on the record once.
func TestADeadAttemptsGenerationIsResumedNotPaidAgain(t *testing.T) {
	var resumes, fresh atomic.Int32
	f := setup(t, resumable(false, &resumes, &fresh))
	f.w = f.newWorker(f.store, withKeeper(f))
	j := f.create("k1", deadAttempt)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept %v, want the job finished", failedIDs(r))
	}
	got := f.get(j.ID)
	if got.State != job.Succeeded || resumes.Load() != 1 || fresh.Load() != 0 {
		t.Fatalf("state %s, resumes %d, fresh generations %d: want succeeded, 1, 0", got.State, resumes.Load(), fresh.Load())
	}
	if got.Cost != 705 || got.Held != 0 || got.Attempts != 2 {
		t.Fatalf("cost %d, held %d, attempts %d: want 705 (5 + the resumed 700, not the 100 held), 0, 2", got.Cost, got.Held, got.Attempts)
	}
	if f.metrics.get("GenerationsResumed") != 1 {
		t.Fatalf("GenerationsResumed = %v, want 1", f.metrics.get("GenerationsResumed"))
	}
}

// A resumed generation the dead attempt started in a cheaper lane is
// priced at that lane, and what the lane saved is on the record as for
// any call.
func TestAResumedGenerationKeepsItsLanesSaving(t *testing.T) {
	l := setupLanes(t, nil)
	l.w = l.newWorker(l.store, withKeeper(l.fixture), func(c *worker.Config) { c.Routes = map[string]job.Route{"default": l.route} })
	j := l.create("k1", func(j *job.Job) {
		deadAttempt(j)
		j.Pending.Lane = job.Flex
	})
	if r := l.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept %v, want the job finished", failedIDs(r))
	}
	got := l.get(j.ID)
	if got.State != job.Succeeded || got.Cost != 5+flexCost || got.Saved != standardCost-flexCost || len(l.lanesAsked()) != 1 {
		t.Fatalf("state %s, cost %d, saved %d, calls %d: want succeeded, %d (5 + the flex generation), %d, 1 (the resume)",
			got.State, got.Cost, got.Saved, len(l.lanesAsked()), 5+flexCost, standardCost-flexCost)
	}
}

// A generation the provider no longer has is generated again; the dead
// attempt's estimate stays, since nothing tells what it cost.
func TestAGoneGenerationIsGeneratedAgain(t *testing.T) {
	var resumes, fresh atomic.Int32
	f := setup(t, resumable(true, &resumes, &fresh))
	f.w = f.newWorker(f.store, withKeeper(f))
	j := f.create("k1", deadAttempt)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Succeeded || resumes.Load() != 1 || fresh.Load() != 1 || got.Cost != 100+900 || !got.CostEstimated {
		t.Fatalf("state %s, resumes %d, fresh %d, cost %d (estimated %v): want succeeded, 1, 1, 1000 estimated",
			got.State, resumes.Load(), fresh.Load(), got.Cost, got.CostEstimated)
	}
}

// A provider that does not keep generations is never asked to resume
// one, whatever the record says (the route changed kinds since).
func TestAPendingGenerationOnAProviderThatKeepsNoneIsIgnored(t *testing.T) {
	var resumes, fresh atomic.Int32
	f := setup(t, resumable(false, &resumes, &fresh))
	j := f.create("k1", deadAttempt)
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Succeeded || resumes.Load() != 0 || fresh.Load() != 1 {
		t.Fatalf("state %s, resumes %d, fresh %d: want succeeded, 0, 1", got.State, resumes.Load(), fresh.Load())
	}
}

// The generation a call starts is on the record, with the attempt's
// hold, before the call waits for it.
func TestTheStartedGenerationIsRecordedBeforeTheWait(t *testing.T) {
	var seen atomic.Pointer[job.Job]
	f := setup(t, nil)
	f.prov.step = func(ctx context.Context, r model.Request, _ int) (model.Response, error) {
		if r.Started == nil {
			return model.Response{}, errors.New("no Started hook")
		}
		r.Started("resp_9")
		cur := f.get(r.JobID)
		seen.Store(&cur)
		return model.Response{Output: "x", Model: "m1", Usage: model.Usage{InputTokens: 3}}, nil
	}
	j := f.create("k1", func(j *job.Job) { j.Reserve = 40 })
	f.deliver(body(j.ID))
	cur := seen.Load()
	if cur == nil || cur.Pending == nil {
		t.Fatal("no pending generation on the record during the call")
	}
	want := job.Pending{Owner: cur.LeaseOwner, Provider: "p", Model: "m1", ID: "resp_9", Held: 40}
	if *cur.Pending != want || cur.LeaseOwner == "" {
		t.Fatalf("pending %+v, want %+v", *cur.Pending, want)
	}
	if got := f.get(j.ID); got.State != job.Succeeded || got.Cost != 3 {
		t.Fatalf("state %s cost %d, want succeeded 3", got.State, got.Cost)
	}
}
