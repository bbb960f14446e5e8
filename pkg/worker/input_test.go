package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/worker"
)

// storedInput creates a job whose input (content of n bytes) is in s, as
// the API keeps a large one, and answers it and the input.
func storedInput(f *fixture, s *memstore.Payloads, key string, n int) (job.Job, []byte) {
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: strings.Repeat("w", n)}}, MaxTokens: 10})
	j := f.create(key, func(j *job.Job) {
		ref := job.PayloadOf("inputs/"+j.ID+"/h", in)
		j.Input, j.InputRef = nil, &ref
	})
	_ = s.Put(context.Background(), j.InputRef.Key, in, "application/json")
	return j, in
}

// withInputs is a fixture whose worker reads stored inputs from s, and
// whose provider records the prompt it was sent.
func withInputs(t *testing.T) (*fixture, *memstore.Payloads, *[]string) {
	var mu sync.Mutex
	var prompts []string
	f := setup(t, func(ctx context.Context, r model.Request, n int) (model.Response, error) {
		mu.Lock()
		for _, m := range r.Messages {
			prompts = append(prompts, m.Content)
		}
		mu.Unlock()
		return ok(1)(ctx, r, n)
	})
	s := memstore.NewPayloads()
	f.w = f.newWorker(f.store, func(c *worker.Config) { c.Inputs = s })
	return f, s, &prompts
}

func TestAStoredInputIsLoadedAndSentWhole(t *testing.T) {
	f, s, prompts := withInputs(t)
	j, _ := storedInput(f, s, "big", 100<<10) // over the 8 KiB kept inline; small enough to load within the fixture's 300 ms lease under -race
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Succeeded {
		t.Fatalf("job %s %s %q", got.State, got.ErrorClass, got.ErrorDetail)
	}
	if len(*prompts) != 1 || len((*prompts)[0]) != 100<<10 {
		t.Fatalf("the provider was sent %d messages, want the whole 100 KiB input", len(*prompts))
	}
}

func TestAStoredInputWhoseDigestDiffersEndsTheJobInternal(t *testing.T) {
	f, s, prompts := withInputs(t)
	j, in := storedInput(f, s, "changed", 20_000)
	changed := append([]byte(nil), in...)
	changed[len(changed)/2] = 'z' // same size, other bytes
	_ = s.Put(context.Background(), j.InputRef.Key, changed, "application/json")
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Failed || got.ErrorClass != job.Internal || !strings.Contains(got.ErrorDetail, "SHA-256") {
		t.Fatalf("job %s %s %q; want failed, internal, naming the digest", got.State, got.ErrorClass, got.ErrorDetail)
	}
	if len(*prompts) != 0 {
		t.Fatal("the provider was called with an input that is not the job's")
	}
}

func TestAMissingStoredInputEndsTheJobInternal(t *testing.T) {
	f, s, _ := withInputs(t)
	j, _ := storedInput(f, s, "gone", 20_000)
	_ = s.Delete(context.Background(), j.InputRef.Key)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Failed || got.ErrorClass != job.Internal || !strings.Contains(got.ErrorDetail, "missing") {
		t.Fatalf("job %s %s %q; want failed, internal, missing", got.State, got.ErrorClass, got.ErrorDetail)
	}
}

// A payload store that does not answer hands the job back uncounted: the
// next delivery, with the store back, runs it as its first attempt.
func TestAnUnavailablePayloadStoreHandsTheJobBackUncounted(t *testing.T) {
	f, s, prompts := withInputs(t)
	j, _ := storedInput(f, s, "later", 20_000)
	s.SetDown(true)
	f.deliver(body(j.ID))
	got := f.get(j.ID)
	if got.State != job.Queued || got.Attempts != 0 || len(*prompts) != 0 || gets(s) == 0 {
		t.Fatalf("job %s, %d attempts, %d calls, %d gets; want queued, uncounted, no call", got.State, got.Attempts, len(*prompts), gets(s))
	}
	if got.NotBefore.IsZero() || got.ErrorClass != job.Internal {
		t.Fatalf("the deferral: not before %v, class %q", got.NotBefore, got.ErrorClass)
	}
	s.SetDown(false)
	time.Sleep(time.Until(got.NotBefore) + 10*time.Millisecond)
	f.deliver(body(j.ID))
	if got := f.get(j.ID); got.State != job.Succeeded || got.Attempts != 1 {
		t.Fatalf("after the store came back: %s, %d attempts", got.State, got.Attempts)
	}
}

// gets is how many reads s was asked.
func gets(s *memstore.Payloads) int {
	_, n := s.Calls()
	return n
}
