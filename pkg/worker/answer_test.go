package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/parking"
	"github.com/aijobs/aijobs/pkg/worker"
)

// newAnswers is a payload store whose first failFirst puts (all of them
// when failFirst is negative) are refused as unavailable.
func newAnswers(failFirst int) *memstore.Payloads {
	s := memstore.NewPayloads()
	s.RefusePuts(failFirst)
	return s
}

// answering is a call that answers an output of n bytes, billed cost.
func answering(n int, cost job.Nanocents) func(context.Context, model.Request, int) (model.Response, error) {
	out := strings.Repeat("a", n)
	return func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: out, Model: "m1", Usage: model.Usage{InputTokens: int64(cost)}}, nil
	}
}

// largeAnswer is over what the record keeps inline.
const largeAnswer = finish.MaxInlineResult + 1000

// storedByRef checks got succeeded with its answer in s at its ref,
// whole (size and digest as the ref says), with an output of n bytes.
func storedByRef(t *testing.T, s *memstore.Payloads, got job.Job, n int) {
	t.Helper()
	if got.State != job.Succeeded || got.ResultRef == nil || len(got.Result) != 0 {
		t.Fatalf("job = %s, ref %+v, inline %d bytes: want succeeded with its answer by ref only", got.State, got.ResultRef, len(got.Result))
	}
	if want := finish.ResultKey(got.ID, got.ResultRef.Key[strings.LastIndex(got.ResultRef.Key, "/")+1:]); got.ResultRef.Key != want || !strings.HasPrefix(want, "results/"+got.ID+"/w") {
		t.Fatalf("key %q, want results/<job id>/<lease owner>", got.ResultRef.Key)
	}
	body, contentType, _ := s.Object(got.ResultRef.Key)
	if contentType != "application/json" {
		t.Fatalf("the answer was put as %q, want application/json", contentType)
	}
	sum := sha256.Sum256(body)
	if int64(len(body)) != got.ResultRef.Size || got.ResultRef.SHA256 != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("stored %d bytes, ref %+v: the ref does not prove the object", len(body), got.ResultRef)
	}
	var res model.Response
	if err := json.Unmarshal(body, &res); err != nil || len(res.Output) != n {
		t.Fatalf("stored answer: %d bytes of output, %v; want %d", len(res.Output), err, n)
	}
}

// TestALargeAnswerIsPutThenRecordedByRef: an answer over the inline
// limit is put in the payload store, and the succeed records its ref,
// the call's exact cost and one generation.
func TestALargeAnswerIsPutThenRecordedByRef(t *testing.T) {
	f := setup(t, answering(largeAnswer, 900))
	s := newAnswers(0)
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Answers = s })
	j := f.create("k1", nil)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	storedByRef(t, s, got, largeAnswer)
	if got.Cost != 900 || got.Attempts != 1 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("cost %v, attempts %d, generations %d; want 900, 1, 1", got.Cost, got.Attempts, f.prov.generations(j.ID))
	}
}

// TestASmallAnswerStaysInline: at the limit the answer is on the record
// and nothing is put.
func TestASmallAnswerStaysInline(t *testing.T) {
	f := setup(t, answering(100, 5))
	s := newAnswers(0)
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Answers = s })
	j := f.create("k1", nil)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if puts, _ := s.Calls(); got.State != job.Succeeded || got.ResultRef != nil || len(got.Result) == 0 || puts != 0 {
		t.Fatalf("job %s, ref %+v, %d puts: want the answer inline, nothing put", got.State, got.ResultRef, puts)
	}
}

// TestAPayloadStoreThatRecoversTakesTheAnswer: the first puts are refused;
// they are retried, and the answer lands by ref, generated once.
func TestAPayloadStoreThatRecoversTakesTheAnswer(t *testing.T) {
	f := setup(t, answering(largeAnswer, 900))
	s := newAnswers(2)
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Answers = s })
	j := f.create("k1", nil)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	storedByRef(t, s, got, largeAnswer)
	if puts, _ := s.Calls(); puts != 3 || got.Cost != 900 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("%d puts, cost %v, %d generations: want 3, 900, 1", puts, got.Cost, f.prov.generations(j.ID))
	}
}

// TestAnAnswerThePayloadStoreNeverTakesKeepsItsCost: the payload store
// refuses every put for the whole finish; the answer is lost but never
// its cost: the attempt fails as internal (retried while attempts are
// left; here it was the last, so the job ends failed), with the call's
// cost on the record and no ref to an answer that is not there.
func TestAnAnswerThePayloadStoreNeverTakesKeepsItsCost(t *testing.T) {
	for _, c := range []struct {
		name        string
		maxAttempts int
		state       job.State
	}{
		{"attempts left: released for a retry", 3, job.Queued},
		{"the last attempt: failed", 1, job.Failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, answering(largeAnswer, 900))
			s := newAnswers(-1)
			w := f.newWorker(f.store, func(cfg *worker.Config) { cfg.Answers = s })
			j := f.create("k1", func(j *job.Job) { j.MaxAttempts = c.maxAttempts })
			handleWithin(t, w, 2*time.Second, j.ID)
			got := f.get(j.ID)
			if got.State != c.state || got.ErrorClass != job.Internal || got.Cost != 900 || got.Held != 0 || got.ResultRef != nil || len(got.Result) != 0 {
				t.Fatalf("job = %s/%s, cost %v, held %v, ref %+v: want %s/internal at the call's cost, nothing held",
					got.State, got.ErrorClass, got.Cost, got.Held, got.ResultRef, c.state)
			}
			if puts, _ := s.Calls(); puts < 2 || f.metrics.get("AnswersUnstored") != 1 {
				t.Fatalf("%d puts, %v counted: want the put retried and the loss counted", puts, f.metrics.get("AnswersUnstored"))
			}
		})
	}
}

// TestNoPayloadStoreFailsALargeAnswerKeepingItsCost: a worker with no
// payload store cannot keep a large answer; its cost stays all the same.
func TestNoPayloadStoreFailsALargeAnswerKeepingItsCost(t *testing.T) {
	f := setup(t, answering(largeAnswer, 900))
	j := f.create("k1", func(j *job.Job) { j.MaxAttempts = 1 })
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Failed || got.ErrorClass != job.Internal || got.Cost != 900 {
		t.Fatalf("job = %s/%s cost %v, want failed/internal at 900", got.State, got.ErrorClass, got.Cost)
	}
}

// inlineTooLarge is a store that refuses an inline answer as too large,
// as DynamoDB refuses an item over 400 KB, and takes one by ref.
type inlineTooLarge struct{ *memstore.Store }

func (s inlineTooLarge) Succeed(ctx context.Context, t job.Succeed) (job.Job, error) {
	if len(t.Result) > 0 {
		return job.Job{}, &job.Error{Code: job.CodeTooLarge}
	}
	return s.Store.Succeed(ctx, t)
}

// TestASmallAnswerTheRecordRefusesGoesByRef: the record has no room even
// for a small answer (a record near the item limit); the answer is moved
// to the payload store rather than failed for its size, as the "result is
// too large to store" ending once did.
func TestASmallAnswerTheRecordRefusesGoesByRef(t *testing.T) {
	f := setup(t, answering(100, 77))
	s := newAnswers(0)
	f.w = f.newWorker(inlineTooLarge{f.store}, func(c *worker.Config) { c.Answers = s })
	j := f.create("k1", nil)
	if r := f.deliver(body(j.ID)); len(r.BatchItemFailures) != 0 {
		t.Fatalf("kept: %v", failedIDs(r))
	}
	got := f.get(j.ID)
	storedByRef(t, s, got, 100)
	if got.Cost != 77 || f.prov.generations(j.ID) != 1 {
		t.Fatalf("cost %v, %d generations; want 77, 1", got.Cost, f.prov.generations(j.ID))
	}
}

// TestAParkedLargeAnswerCarriesItsRef: the table refuses the succeed for
// the whole invocation; what is parked is the ref (the answer was put
// first), not the body, and the next worker settles it by ref at the
// exact cost without generating again.
func TestAParkedLargeAnswerCarriesItsRef(t *testing.T) {
	f := setup(t, answering(largeAnswer, 40))
	j := f.create("k1", func(j *job.Job) { j.Reserve = 100 })
	var down atomic.Bool
	var tries atomic.Int32
	down.Store(true)
	l, s := newLot(), newAnswers(0)
	first := f.newWorker(refusingFinishes{f.store, &down, &tries}, func(c *worker.Config) { c.Parking, c.Answers = l, s })
	if kept := handleWithin(t, first, time.Second, j.ID); kept != 1 {
		t.Fatal("the message of a parked outcome was deleted")
	}
	owner := f.get(j.ID).LeaseOwner
	raw, err := l.Get(context.Background(), parking.Key(j.ID, owner))
	if err != nil {
		t.Fatalf("nothing parked for %s", owner)
	}
	var o finish.Outcome
	if err := json.Unmarshal(raw, &o); err != nil || o.Succeed == nil || o.Succeed.ResultRef == nil || strings.Contains(string(raw), "aaaa") || len(raw) > 4096 {
		t.Fatalf("parked %d bytes: %s (%v); want the succeed with a ref and no body", len(raw), raw[:min(len(raw), 300)], err)
	}
	if o.Succeed.ResultRef.Key != finish.ResultKey(j.ID, owner) {
		t.Fatalf("parked ref %+v, want the attempt's key", o.Succeed.ResultRef)
	}

	second := f.newWorker(f.store, func(c *worker.Config) { c.Parking, c.Answers = l, s })
	f.waitLeaseEnd(j.ID)
	handleWithin(t, second, time.Second, j.ID)
	got := f.get(j.ID)
	storedByRef(t, s, got, largeAnswer)
	if got.Cost != 40 || got.CostEstimated || f.prov.generations(j.ID) != 1 {
		t.Fatalf("cost %v (estimated %v), %d generations: want exactly 40 and one generation", got.Cost, got.CostEstimated, f.prov.generations(j.ID))
	}
}
