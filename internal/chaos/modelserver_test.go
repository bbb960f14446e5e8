package chaos

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// call makes one request of job 3 with the real OpenAI-compatible provider
// against a model server whose every request follows p, and returns what
// the provider reported and what the server billed.
func call(t *testing.T, p GenPlan, stream bool, timeout time.Duration) (model.Response, Generation, Receipt, error) {
	t.Helper()
	s := &ModelServer{Plan: func(string, int, int) GenPlan { return p }, JobName: func(string, int) string { return "j" }}
	srv := httptest.NewServer(s)
	defer srv.Close()
	tally := NewTally()
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/w/test/v1", Stream: stream,
		HTTPClient: &http.Client{Transport: observe(http.DefaultTransport, tally, "test")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	content := JobPlan{Index: 3, Tenant: "t1"}.Content("aj")
	resp, err := c.Generate(ctx, model.Request{Model: "m", MaxTokens: 64, Messages: []job.Message{{Role: "user", Content: content}}})
	// The server finishes (and bills) on its own time.
	deadline := time.Now().Add(15 * time.Second)
	for len(s.Generations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	gens := s.Generations()
	if len(gens) != 1 {
		t.Fatalf("%d generations billed, want 1", len(gens))
	}
	g := gens[0]
	if g.NS != "aj" || g.Index != 3 || g.Who != "test" || g.Stream != stream {
		t.Fatalf("generation attributed to %+v", g)
	}
	if want := (int64(len(content)) + 3) / 4; g.Prompt != want && g.Billed() && g.Outcome != "rate_limited" {
		t.Fatalf("prompt billed %d, want the provider's estimate %d", g.Prompt, want)
	}
	rc, _ := tally.Receipt(g.ID())
	return resp, g, rc, err
}

func usageOf(err error) model.Usage {
	_, u := model.Classify(err)
	return u
}

func TestModelServerBillsWhatTheProviderReports(t *testing.T) {
	t.Parallel()
	plan := GenPlan{Tokens: 12, Prefill: 10 * time.Millisecond, PerToken: 5 * time.Millisecond}
	for _, stream := range []bool{true, false} {
		resp, g, rc, err := call(t, plan, stream, 5*time.Second)
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if !rc.Complete || g.Output != 12 || resp.Usage != (model.Usage{InputTokens: g.Prompt, OutputTokens: g.Output}) {
			t.Fatalf("stream=%v: provider usage %+v, server billed %+v, client received %+v", stream, resp.Usage, g, rc)
		}
		if stream && rc.Chunks != 12 {
			t.Fatalf("the client read %d content chunks, want 12", rc.Chunks)
		}
	}
}

func TestModelServerFaults(t *testing.T) {
	t.Parallel()
	base := GenPlan{Tokens: 20, Prefill: 10 * time.Millisecond, PerToken: 10 * time.Millisecond}
	with := func(f ModelFault) GenPlan { p := base; p.Fault = f; return p }
	t.Run("429 bills nothing", func(t *testing.T) {
		_, g, rc, err := call(t, with(ModelFault{Kind: ModelRateLimited, RetryAfter: 2}), true, 5*time.Second)
		if c, _ := model.Classify(err); c != job.RateLimited || g.Billed() || rc.Complete {
			t.Fatalf("class %s, billed %+v", c, g)
		}
	})
	t.Run("529 is overloaded", func(t *testing.T) {
		_, g, rc, err := call(t, with(ModelFault{Kind: ModelOverloaded, Status: 529}), false, 5*time.Second)
		if c, _ := model.Classify(err); c != job.Overloaded || g.Billed() || rc.Complete {
			t.Fatalf("class %s, billed %+v", c, g)
		}
	})
	t.Run("a stream cut mid-way bills the tokens sent", func(t *testing.T) {
		_, g, rc, err := call(t, with(ModelFault{Kind: ModelCut, CutAfter: 7}), true, 5*time.Second)
		// The provider never got the usage chunk: it reports the tokens it
		// read and an upper estimate of the prompt, marked estimated.
		if u := usageOf(err); err == nil || g.Output != 7 || rc.Complete || rc.Chunks != 7 || u.OutputTokens != 7 || u.InputTokens < g.Prompt || !u.Estimated {
			t.Fatalf("err %v usage %+v, billed %+v, received %+v", err, usageOf(err), g, rc)
		}
	})
	t.Run("a stream cut before its headers bills the prompt", func(t *testing.T) {
		_, g, _, err := call(t, with(ModelFault{Kind: ModelCut, CutAfter: -1}), true, 5*time.Second)
		if err == nil || g.Output != 0 || g.Prompt == 0 {
			t.Fatalf("err %v, billed %+v", err, g)
		}
	})
	t.Run("a non-streaming call the client gave up on is finished and billed", func(t *testing.T) {
		start := time.Now()
		_, g, rc, err := call(t, with(ModelFault{Kind: ModelStallHeaders, Delay: time.Second}), false, 300*time.Millisecond)
		var me *model.Error
		if err == nil || errors.As(err, &me) && me.Class != job.Timeout || g.Output != 20 || rc.Complete || g.End.Sub(start) < time.Second {
			t.Fatalf("err %v, billed %+v, received %+v", err, g, rc)
		}
	})
	t.Run("a stream the client gave up on stops and bills what was sent", func(t *testing.T) {
		p := with(ModelFault{Kind: ModelTrickle})
		p.PerToken = 100 * time.Millisecond
		_, g, rc, err := call(t, p, true, 550*time.Millisecond)
		seen := usageOf(err).OutputTokens
		if err == nil || rc.Complete || seen != int64(rc.Chunks) || g.Output < seen || g.Output > seen+1 || g.Output >= 20 {
			t.Fatalf("err %v: client saw %d tokens (receipt %+v), server billed %+v", err, seen, rc, g)
		}
	})
}

func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	t.Parallel()
	o := ScheduleOptions{Seed: 5, Jobs: 400, Tenants: 4, Load: time.Minute, KillEvery: 10 * time.Second,
		Model:   DefaultOptions().Model,
		Reserve: func(string, string, int) job.Nanocents { return job.Cents(1) / 100 }}
	a, b := NewSchedule(o), NewSchedule(o)
	ids := map[string]bool{}
	killed := 0
	for i := range a.Jobs {
		pa, pb := a.Jobs[i], b.Jobs[i]
		if pa.Content("aj") != pb.Content("aj") || pa.Tenant != pb.Tenant || pa.At != pb.At || pa.APIKilled != pb.APIKilled || a.Gen("aj", i, 1) != b.Gen("bl", i, 1) {
			t.Fatalf("job %d differs between two schedules of one seed: %+v %+v", i, pa, pb)
		}
		if len(pa.Content("aj")) != len(pa.Content("bl")) {
			t.Fatal("the baseline's prompt must bill the same tokens")
		}
		if ids[pa.ID()] {
			t.Fatalf("job %d: id %s twice (tenant %s key %s)", i, pa.ID(), pa.Tenant, pa.Key)
		}
		ids[pa.ID()] = true
		if pa.APIKilled {
			killed++
			if pa.At >= o.Load/2 {
				t.Fatalf("job %d loses its message at %s, too late for the reconciler's bound", i, pa.At)
			}
		}
	}
	if killed == 0 || len(a.Kills) == 0 {
		t.Fatalf("%d lost messages, %d kills: the schedule must hold every fault", killed, len(a.Kills))
	}
	if c := NewSchedule(ScheduleOptions{Seed: 6, Jobs: 400, Tenants: 4, Load: time.Minute, Model: o.Model, Reserve: o.Reserve}); c.Jobs[7].Tenant == a.Jobs[7].Tenant && c.Jobs[8].Tenant == a.Jobs[8].Tenant && c.Jobs[9].Tenant == a.Jobs[9].Tenant && c.Gen("aj", 7, 0) == a.Gen("aj", 7, 0) {
		t.Fatal("another seed, the same schedule")
	}
}
