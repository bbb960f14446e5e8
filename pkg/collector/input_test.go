package collector_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// prompts records the content of every request a batch was submitted with.
type prompts struct {
	*fake.Provider
	mu   sync.Mutex
	sent map[string]string
}

func (p *prompts) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	p.mu.Lock()
	for _, r := range reqs {
		p.sent[r.JobID] = r.Messages[0].Content
	}
	p.mu.Unlock()
	return p.Provider.SubmitBatch(ctx, key, reqs)
}

// storedSetup is the fixture with a collector that reads stored inputs
// from s and a provider that records what it was sent.
func storedSetup(t *testing.T) (*fixture, *memstore.Payloads, *prompts) {
	var p *prompts
	f := setup(t, 0, func(fp *fake.Provider) model.Provider {
		p = &prompts{Provider: fp, sent: map[string]string{}}
		return p
	})
	s := memstore.NewPayloads()
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue,
		Providers: map[string]model.Provider{"f": p}, Routes: map[string]job.Route{"default": f.route},
		Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}, Inputs: s})
	return f, s, p
}

// enlistedStored is an enlisted job whose input (content) is in s, its
// record holding the pointer, not the input, as the API writes a large one.
func (f *fixture) enlistedStored(s *memstore.Payloads, key, content string) job.Job {
	ctx, now := context.Background(), time.Now()
	input := job.Input{Messages: []job.Message{{Role: "user", Content: content}}, MaxTokens: 10}
	in, _ := json.Marshal(input)
	id := job.NewID("t1", key)
	ref := job.PayloadOf("inputs/"+id+"/h", in)
	_ = s.Put(ctx, ref.Key, in, "application/json")
	j := job.Job{ID: id, Tenant: "t1", RequestKey: key, InputHash: "sha256:" + key, Model: "default", InputRef: &ref, State: job.Queued,
		MaxAttempts: 3, Budget: job.Cents(100), Deadline: now.Add(2 * time.Hour), Version: 1, CreatedAt: job.Millis(now), UpdatedAt: job.Millis(now),
		Reserve: f.route.Reserve(input, nil)}
	if _, err := f.store.Create(ctx, j); err != nil {
		f.t.Fatal(err)
	}
	owner := "w_" + key
	if _, err := f.store.Claim(ctx, job.Claim{ID: id, Owner: owner, Now: now.Add(time.Millisecond), LeaseUntil: now.Add(time.Minute)}); err != nil {
		f.t.Fatal(err)
	}
	got, err := f.store.Enlist(ctx, job.Enlist{ID: id, Owner: owner, Now: now.Add(2 * time.Millisecond), Lane: job.LaneKey("default", 0), Until: now.Add(time.Hour)})
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

func TestABatchSendsAStoredInputWhole(t *testing.T) {
	f, s, p := storedSetup(t)
	content := strings.Repeat("b", 300_000)
	j := f.enlistedStored(s, "big", content)
	f.run()
	f.run()
	if got := f.get(j.ID); got.State != job.Succeeded || got.InputRef == nil {
		t.Fatalf("job %s %s %q", got.State, got.ErrorClass, got.ErrorDetail)
	}
	if p.sent[j.ID] != content {
		t.Fatalf("the batch carried %d bytes of content, want the whole %d", len(p.sent[j.ID]), len(content))
	}
}

func TestABatchHandsBackAJobWhoseStoredInputIsNotItsOwn(t *testing.T) {
	f, s, p := storedSetup(t)
	j := f.enlistedStored(s, "changed", "the original question")
	_ = s.Put(context.Background(), "inputs/"+j.ID+"/h", []byte(`{"messages":[{"role":"user","content":"another question!!"}],"max_tokens":10}`), "application/json")
	f.run()
	got := f.get(j.ID)
	if _, sent := p.sent[j.ID]; sent || got.Batch != "" || got.LeaseOwner == job.BatchOwner(got.Batch) {
		t.Fatalf("a job whose input differs was batched: sent %v, %+v", sent, got)
	}
}

// A payload store that does not answer fails the run before anything is
// sent; the next run, with the store back, sends the job.
func TestABatchWaitsForAnUnavailablePayloadStore(t *testing.T) {
	f, s, p := storedSetup(t)
	j := f.enlistedStored(s, "later", "a question")
	s.SetDown(true)
	if err := f.c.Run(context.Background()); err == nil {
		t.Fatal("a run whose input could not be read reported no error")
	}
	if _, sent := p.sent[j.ID]; sent {
		t.Fatal("sent without its input")
	}
	s.SetDown(false)
	f.run()
	f.run()
	if got := f.get(j.ID); got.State != job.Succeeded || p.sent[j.ID] != "a question" {
		t.Fatalf("after the store came back: %s, sent %q", got.State, p.sent[j.ID])
	}
}
