package collector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

// embedFixture is a collector of two routes on one OpenAI provider, each
// with a batch lane at 2 nanocents an input token: "default" a chat
// model's, "embed" an embedding model's.
type embedFixture struct {
	*fixture
	routes  map[string]job.Route
	server  *openaitest.Server
	answers *memstore.Payloads
}

func withEmbeddings(t *testing.T) *embedFixture {
	s := &openaitest.Server{}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	rung := func(model string, embeds, batches bool) job.Route {
		std := job.Rung{Provider: "o", Model: model, Price: job.Price{InputPerToken: 4, OutputPerToken: 8}, Timeout: time.Second, Embeds: embeds}
		std.Takes.BatchEmbeddings = batches
		b := std
		b.Lane, b.Base, b.Price, b.Timeout, b.Completion, b.MaxJobs = job.Batch, std.Price, job.Price{InputPerToken: 2, OutputPerToken: 4}, 0, time.Hour, 100
		std.Lanes = []job.Rung{b}
		return job.Route{Rungs: []job.Rung{std}}
	}
	// "nobatch": an embedding rung whose provider takes no embeddings in
	// batches (as a Titan rung's), which the create refuses them.
	routes := map[string]job.Route{"default": rung("gpt-test", false, false), "embed": rung("text-embedding-3-small", true, true),
		"nobatch": rung("text-embedding-3-small", true, false)}
	f := &fixture{t: t, store: memstore.New(), batches: &batches{open: map[string]job.BatchRecord{}}, queue: &queue{}, route: routes["default"]}
	answers := memstore.NewPayloads() // 5,000 vectors are too large for the record
	f.c = collector.New(collector.Config{Store: f.store, Batches: f.batches, Queue: f.queue,
		Providers: map[string]model.Provider{"o": c}, Routes: routes, Answers: answers,
		Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}})
	return &embedFixture{fixture: f, routes: routes, server: s, answers: answers}
}

// enlistIn is a job of input claimed and enlisted in route's batch lane.
func (f *embedFixture) enlistIn(route, key string, input job.Input) job.Job {
	ctx, now := context.Background(), time.Now()
	in, _ := json.Marshal(input)
	j := job.Job{ID: job.NewID("t1", key), Tenant: "t1", RequestKey: key, InputHash: "sha256:" + key, Model: route, Input: in, State: job.Queued,
		MaxAttempts: 3, Budget: job.Cents(1), Deadline: now.Add(2 * time.Hour), Version: 1, CreatedAt: job.Millis(now), UpdatedAt: job.Millis(now)}
	j.Reserve = f.routes[route].Reserve(input, nil)
	if _, err := f.store.Create(ctx, j); err != nil {
		f.t.Fatal(err)
	}
	owner := "w_" + key
	if _, err := f.store.Claim(ctx, job.Claim{ID: j.ID, Owner: owner, Now: now.Add(time.Millisecond), LeaseUntil: now.Add(time.Minute)}); err != nil {
		f.t.Fatal(err)
	}
	got, err := f.store.Enlist(ctx, job.Enlist{ID: j.ID, Owner: owner, Now: now.Add(2 * time.Millisecond), Lane: job.LaneKey(route, 0), Until: now.Add(time.Hour)})
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

func numbered(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

func billed(in []string) int64 {
	var n int64
	for _, t := range in {
		n += openaitest.EmbeddingTokens(t)
	}
	return n
}

// An embedding job and a chat job on one provider's batch lanes go in
// two batches, each on its own endpoint (the fake fails a batch that
// mixes them, as OpenAI's validation does). The embedding job's 5,000
// texts are three lines; it settles once, its vectors in input order,
// its cost the lines' tokens at the batch price exactly.
func TestEmbeddingAndChatJobsAreBatchedApartAndSettled(t *testing.T) {
	f := withEmbeddings(t)
	texts := numbered(5000, "text %d")
	e := f.enlistIn("embed", "e", job.Input{Texts: texts, Dimensions: 8})
	c := f.enlistIn("default", "c", job.Input{Messages: []job.Message{{Role: "user", Content: "hi"}}, MaxTokens: 10})
	f.run() // collected and submitted, each lane its batch
	if f.server.Batches() != 2 || len(f.server.Inputs()) != 4 {
		t.Fatalf("%d batches of %d lines, want 2 of 4 (3 embedding, 1 chat)", f.server.Batches(), len(f.server.Inputs()))
	}
	f.run() // ended: settled
	got := f.get(e.ID)
	if got.State != job.Succeeded || got.ResultLane != job.Batch || got.Attempts != 1 || got.Cost != job.Nanocents(2*billed(texts)) || got.CostEstimated {
		t.Fatalf("embedding job: %s lane %s attempts %d cost %d (estimated %v), want succeeded in the batch lane at %d",
			got.State, got.ResultLane, got.Attempts, got.Cost, got.CostEstimated, 2*billed(texts))
	}
	if got.ResultRef == nil {
		t.Fatalf("5,000 vectors recorded inline (%d bytes)", len(got.Result))
	}
	body, _, _ := f.answers.Object(got.ResultRef.Key)
	var res struct{ Output string }
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	vs, err := apiwire.DecodeEmbeddings(res.Output)
	if err != nil || len(vs) != len(texts) {
		t.Fatalf("%d vectors, %v", len(vs), err)
	}
	for i, v := range vs {
		if !slices.Equal(v, openaitest.Vector(texts[i], 8)) {
			t.Fatalf("vector %d is not text %d's", i, i)
		}
	}
	if got := f.get(c.ID); got.State != job.Succeeded || got.ResultLane != job.Batch {
		t.Errorf("chat job: %+v", got)
	}
}

// A failed line fails its job with the line's class, its cost the lines
// that answered, at the batch price.
func TestAFailedEmbeddingLineFailsTheJobKeepingItsCost(t *testing.T) {
	f := withEmbeddings(t)
	texts := numbered(4100, "t%d")
	texts[3000] = "" // refused 400 by the provider, in the second of three lines
	e := f.enlistIn("embed", "e", job.Input{Texts: texts})
	f.run()
	f.run()
	answered := billed(texts[:2048]) + billed(texts[4096:])
	if got := f.get(e.ID); got.State != job.Failed || got.ErrorClass != job.InvalidRequest || got.Cost != job.Nanocents(2*answered) {
		t.Errorf("%s %s cost %d, want failed invalid_request at %d", got.State, got.ErrorClass, got.Cost, 2*answered)
	}
}

// An embedding lane's batch holds at most five jobs, OpenAI's 50,000
// inputs of a batch at up to 10,000 texts a job; the rest wait for the
// next.
func TestAnEmbeddingBatchHoldsAtMostFiveJobs(t *testing.T) {
	f := withEmbeddings(t)
	var ids []string
	for i := range 7 {
		ids = append(ids, f.enlistIn("embed", fmt.Sprint("e", i), job.Input{Texts: []string{"a"}}).ID)
	}
	f.run()
	in := 0
	for _, id := range ids {
		if f.get(id).Batch != "" {
			in++
		}
	}
	if in != 5 || f.server.Batches() != 1 {
		t.Errorf("%d jobs in %d batches after one run, want 5 in 1", in, f.server.Batches())
	}
}

// A job whose input is not of its lane's kind, or an embedding job in a
// lane whose provider takes no embeddings in batches (its route changed
// since it was created), is handed back, never put in a batch.
func TestAJobOfTheOtherKindIsHandedBackNotBatched(t *testing.T) {
	for _, route := range []string{"default", "nobatch"} {
		t.Run(route, func(t *testing.T) {
			f := withEmbeddings(t)
			odd := f.enlistIn(route, "odd", job.Input{Texts: []string{"a"}})
			f.run()
			if got := f.get(odd.ID); got.Batch != "" || got.State != job.Queued || !slices.Contains(f.queue.sent, odd.ID) || f.server.Batches() != 0 {
				t.Errorf("%+v, %d batches; want it handed back and no batch", got, f.server.Batches())
			}
		})
	}
}
