package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// call makes one request of job 3 with the real OpenAI-compatible provider
// against a model server whose every request follows p, and returns what
// the provider reported and what the server billed.
func call(t *testing.T, p GenPlan, stream bool, timeout time.Duration) (model.Response, Generation, Receipt, error) {
	t.Helper()
	return callIn(t, p, stream, timeout, "")
}

// callIn is call with the request made in lane (its service_tier).
func callIn(t *testing.T, p GenPlan, stream bool, timeout time.Duration, lane job.Lane) (model.Response, Generation, Receipt, error) {
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
	resp, err := c.Generate(ctx, model.Request{Model: "m", MaxTokens: 64, Messages: []job.Message{{Role: "user", Content: content}}, Lane: lane})
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

// TestModelServerLanes: the server honours service_tier as OpenAI does.
// A flex request the plan refuses is answered the flex pool's 429, which
// the provider classes capacity_unavailable, billed nothing and priced
// in no lane; the same plan in another lane is served and billed in that
// lane. Flex is paced slower and priority faster, a late generation
// neither.
func TestModelServerLanes(t *testing.T) {
	t.Parallel()
	p := GenPlan{Tokens: 10, Prefill: 10 * time.Millisecond, PerToken: 20 * time.Millisecond, FlexRefused: true}
	for _, stream := range []bool{true, false} {
		_, g, rc, err := callIn(t, p, stream, 5*time.Second, job.Flex)
		if c, u := model.Classify(err); c != job.CapacityUnavailable || u != (model.Usage{}) || g.Billed() || rc.Complete ||
			g.Lane != job.Flex || g.Fault != ModelFlexRefused || g.Outcome != "capacity_unavailable" {
			t.Fatalf("stream=%v: a refused flex request: class %s usage %+v, ledger %+v, receipt %+v", stream, c, u, g, rc)
		}
	}
	for _, lane := range []job.Lane{job.Standard, job.Priority} {
		_, g, rc, err := callIn(t, p, false, 5*time.Second, lane)
		if err != nil || !rc.Complete || g.Lane != lane || g.Output != 10 || g.Fault != "" {
			t.Fatalf("lane %s: err %v, ledger %+v, receipt %+v: only flex is refused", lane, err, g, rc)
		}
	}
	if f, pr := p.inLane(job.Flex), p.inLane(job.Priority); f.PerToken != 40*time.Millisecond || f.Prefill != 20*time.Millisecond ||
		pr.PerToken != 10*time.Millisecond || pr.Prefill != 5*time.Millisecond || p.inLane(job.Standard) != p {
		t.Fatalf("paces: flex %+v, priority %+v", f, pr)
	}
	late := GenPlan{Tokens: 10, PerToken: 700 * time.Millisecond, Fault: ModelFault{Kind: ModelLate, Total: 7 * time.Second}}
	if late.inLane(job.Priority) != late {
		t.Fatal("a late generation's length is its fault, in every lane")
	}
	s := httptest.NewServer(&ModelServer{Plan: func(string, int, int) GenPlan { return p }, JobName: func(string, int) string { return "j" }})
	defer s.Close()
	resp, err := http.Post(s.URL+"/w/test/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","service_tier":"scale","messages":[{"role":"user","content":"[chaos aj 1] x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a tier the provider does not sell answered %d", resp.StatusCode)
	}
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
	laneMix(t, a)
	if c := NewSchedule(ScheduleOptions{Seed: 6, Jobs: 400, Tenants: 4, Load: time.Minute, Model: o.Model, Reserve: o.Reserve}); c.Jobs[7].Tenant == a.Jobs[7].Tenant && c.Jobs[8].Tenant == a.Jobs[8].Tenant && c.Jobs[9].Tenant == a.Jobs[9].Tenant && c.Gen("aj", 7, 0) == a.Gen("aj", 7, 0) {
		t.Fatal("another seed, the same schedule")
	}
}

// laneMix holds the schedule's laned route to jobs of every kind: due
// soon enough for priority, for standard, late enough for flex (most by
// the default deadline), and some allowing flex alone; no other route's
// job names lanes.
func laneMix(t *testing.T, s *Schedule) {
	t.Helper()
	kinds := map[string]int{}
	for _, p := range s.Jobs {
		// A spend-limited tenant's jobs due by default are due in 20 s or
		// more instead (spendDeadline): flex's p99 is 7.5 s.
		_, limited := spendLimits[p.Tenant]
		dueByDefault := p.Deadline == 0 || limited && p.Deadline >= 20
		switch {
		case len(p.Lanes) > 0 && (p.Route != lanedRoute || !dueByDefault || !slices.Equal(p.Lanes, []job.Lane{job.Flex})):
			t.Fatalf("job %d names lanes %v (route %s, deadline %d)", p.Index, p.Lanes, p.Route, p.Deadline)
		case p.Route != lanedRoute:
		case len(p.Lanes) > 0:
			kinds["flex only"]++
		case p.Deadline == 0 || p.Deadline >= 8:
			kinds["flex"]++
		case p.Deadline >= 4:
			kinds["standard"]++
		default:
			kinds["priority"]++
		}
	}
	if kinds["flex only"] == 0 || kinds["priority"] == 0 || kinds["standard"] < kinds["priority"] || kinds["flex"] < kinds["standard"] {
		t.Fatalf("the laned route's jobs by the lane their deadline picks: %v", kinds)
	}
}

// bgServer is a model server whose every request follows p, and a
// background (Responses API) client of it calling as who.
type bgServer struct {
	s     *ModelServer
	url   string
	tally *Tally
}

func newBGServer(t *testing.T, p GenPlan) *bgServer {
	t.Helper()
	s := &ModelServer{Plan: func(string, int, int) GenPlan { return p }, JobName: func(string, int) string { return "j" }}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &bgServer{s: s, url: srv.URL, tally: NewTally()}
}

func (b *bgServer) client(t *testing.T, who string) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: b.url + "/w/" + who + "/v1", Background: true, PollEvery: 10 * time.Millisecond,
		HTTPClient: &http.Client{Transport: observe(http.DefaultTransport, b.tally, who)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var bgContent = JobPlan{Index: 3, Tenant: "t1"}.Content("aj")

// generate is one background call of job 3 as who, resuming id when set;
// it returns what the provider answered and the id it was told.
func (b *bgServer) generate(t *testing.T, who, resume string, timeout time.Duration) (model.Response, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var started string
	resp, err := b.client(t, who).Generate(ctx, model.Request{Model: "m", MaxTokens: 64, Resume: resume,
		Messages: []job.Message{{Role: "user", Content: bgContent}}, Started: func(id string) { started = id }})
	return resp, started, err
}

// only is the one generation the server has, once it is done (the server
// runs it on its own time).
func (b *bgServer) only(t *testing.T) Generation {
	t.Helper()
	gens := b.s.Generations()
	if len(gens) != 1 {
		t.Fatalf("%d generations in the ledger, want 1: %+v", len(gens), gens)
	}
	g := gens[0]
	if g.NS != "aj" || g.Index != 3 || !g.Background || g.Stream {
		t.Fatalf("generation attributed to %+v", g)
	}
	if g.Billed() && g.Prompt != promptTokens(bgContent) {
		t.Fatalf("prompt billed %d, want %d", g.Prompt, promptTokens(bgContent))
	}
	return g
}

// waitDone waits for the only generation to end on the server.
func (b *bgServer) waitDone(t *testing.T) Generation {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if g := b.only(t); !strings.HasPrefix(g.Outcome, "generating") {
			return g
		}
	}
	t.Fatal("the generation never ended")
	return Generation{}
}

func TestBackgroundCreatePollComplete(t *testing.T) {
	t.Parallel()
	b := newBGServer(t, GenPlan{Tokens: 12, Prefill: 20 * time.Millisecond, PerToken: 5 * time.Millisecond})
	resp, id, err := b.generate(t, "a", "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g := b.only(t)
	rc, _ := b.tally.Receipt(g.ID())
	if id == "" || g.Output != 12 || g.Outcome != "completed" || resp.Usage != (model.Usage{InputTokens: g.Prompt, OutputTokens: 12}) {
		t.Fatalf("id %q, provider usage %+v, server billed %+v", id, resp.Usage, g)
	}
	if !rc.Complete || !slices.Equal(b.tally.Readers(g.ID()), []string{"a"}) || resp.Output != strings.Repeat("tok ", 12) {
		t.Fatalf("receipt %+v readers %v output %q", rc, b.tally.Readers(g.ID()), resp.Output)
	}
}

func TestBackgroundCancelBillsWhatWasMade(t *testing.T) {
	t.Parallel()
	b := newBGServer(t, GenPlan{Tokens: 40, Prefill: 20 * time.Millisecond, PerToken: 50 * time.Millisecond})
	start := time.Now()
	_, id, err := b.generate(t, "a", "", 500*time.Millisecond)
	elapsed := time.Since(start)
	g := b.only(t)
	u := usageOf(err)
	// About (500 - 20) / 50 tokens by the cancel; the provider bills the
	// worst case, which must cover the bill.
	made := int64((elapsed - 20*time.Millisecond) / (50 * time.Millisecond))
	if err == nil || id == "" || !strings.HasPrefix(g.Outcome, "cancelled@") || g.Output < 5 || g.Output > made || g.Output >= 40 {
		t.Fatalf("err %v id %q: billed %+v, want cancelled with 5..%d tokens", err, id, g, made)
	}
	if !u.Estimated || u.InputTokens < g.Prompt || u.OutputTokens < g.Output {
		t.Fatalf("the call's usage %+v does not cover the bill %+v", u, g)
	}
	if rc, ok := b.tally.Receipt(g.ID()); ok && rc.Complete {
		t.Fatalf("a cancelled generation was read whole: %+v", rc)
	}
	time.Sleep(100 * time.Millisecond)
	if later := b.only(t); later.Output != g.Output {
		t.Fatalf("billed %d tokens after the cancel, %d at it", later.Output, g.Output)
	}
}

func TestBackgroundUnknownIDIsGone(t *testing.T) {
	t.Parallel()
	b := newBGServer(t, GenPlan{Tokens: 5})
	_, _, err := b.generate(t, "a", "resp_nobody", 2*time.Second)
	if !errors.Is(err, model.ErrGone) || len(b.s.Generations()) != 0 {
		t.Fatalf("err %v, ledger %+v", err, b.s.Generations())
	}
	for _, r := range []struct{ method, path string }{{"GET", "/w/a/v1/responses/resp_nobody"}, {"POST", "/w/a/v1/responses/resp_nobody/cancel"}} {
		req, _ := http.NewRequest(r.method, b.url+r.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s %s: %d, want 404", r.method, r.path, resp.StatusCode)
		}
	}
}

func TestBackgroundCutCreateIsBilledWhole(t *testing.T) {
	t.Parallel()
	for _, cut := range []int{-1, 3} {
		b := newBGServer(t, GenPlan{Tokens: 10, Prefill: 10 * time.Millisecond, PerToken: 5 * time.Millisecond,
			Fault: ModelFault{Kind: ModelCut, CutAfter: cut}})
		_, id, err := b.generate(t, "a", "", 2*time.Second)
		g := b.waitDone(t)
		u := usageOf(err)
		if err == nil || id != "" || g.Output != 10 || g.Outcome != "completed, id never answered" {
			t.Fatalf("cut %d: err %v, id %q, billed %+v", cut, err, id, g)
		}
		if !u.Estimated || u.InputTokens < g.Prompt || u.OutputTokens < g.Output {
			t.Fatalf("cut %d: the call's usage %+v does not cover the bill %+v", cut, u, g)
		}
	}
}

func TestBackgroundAnyWorkerPollsAnID(t *testing.T) {
	t.Parallel()
	b := newBGServer(t, GenPlan{Tokens: 8, Prefill: 10 * time.Millisecond, PerToken: 20 * time.Millisecond})
	// Worker a makes the generation and dies before it waits: a raw
	// create, nobody polls or cancels it.
	resp, err := http.Post(b.url+"/w/a/v1/responses", "application/json",
		strings.NewReader(`{"model":"m","background":true,"store":true,"max_output_tokens":64,"input":[{"role":"user","content":"`+bgContent+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var o struct{ ID, Status string }
	_ = json.NewDecoder(resp.Body).Decode(&o)
	resp.Body.Close()
	if o.ID == "" || !pendingStatus(o.Status) || resp.Header.Get(genHeader) != "" {
		t.Fatalf("create answered %+v (gen header %q)", o, resp.Header.Get(genHeader))
	}
	if b.s.InFlight("a") != 1 || b.s.InFlight("b") != 0 {
		t.Fatalf("in flight: a %d, b %d; want a's generation counted as its open call", b.s.InFlight("a"), b.s.InFlight("b"))
	}
	// Worker b resumes it through its own base URL.
	out, _, err := b.generate(t, "b", o.ID, 5*time.Second)
	g := b.only(t)
	if err != nil || g.Who != "a" || out.Usage != (model.Usage{InputTokens: g.Prompt, OutputTokens: 8}) {
		t.Fatalf("resume: err %v usage %+v, ledger %+v", err, out.Usage, g)
	}
	if r := b.tally.Readers(g.ID()); !slices.Equal(r, []string{"b"}) {
		t.Fatalf("readers %v, want b alone", r)
	}
}

func TestBackgroundResumeLeavesItRunning(t *testing.T) {
	t.Parallel()
	b := newBGServer(t, GenPlan{Tokens: 20, Prefill: 10 * time.Millisecond, PerToken: 25 * time.Millisecond})
	resp, err := http.Post(b.url+"/w/a/v1/responses", "application/json",
		strings.NewReader(`{"model":"m","background":true,"max_output_tokens":64,"input":[{"role":"user","content":"`+bgContent+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var o struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&o)
	resp.Body.Close()
	// A resume cut off by its timeout cancels nothing: a later one may
	// still fetch it, and it is billed whole.
	if _, _, err := b.generate(t, "b", o.ID, 100*time.Millisecond); err == nil {
		t.Fatal("a resume that timed out succeeded")
	}
	if g := b.waitDone(t); g.Outcome != "completed" || g.Output != 20 {
		t.Fatalf("billed %+v, want completed whole", g)
	}
}

func TestBackgroundFaults(t *testing.T) {
	t.Parallel()
	base := GenPlan{Tokens: 10, Prefill: 10 * time.Millisecond, PerToken: 10 * time.Millisecond}
	with := func(f ModelFault) GenPlan { p := base; p.Fault = f; return p }
	t.Run("429 on the create starts nothing", func(t *testing.T) {
		b := newBGServer(t, with(ModelFault{Kind: ModelRateLimited, RetryAfter: 1}))
		_, id, err := b.generate(t, "a", "", 2*time.Second)
		if c, _ := model.Classify(err); c != job.RateLimited || id != "" || b.only(t).Billed() {
			t.Fatalf("class %s id %q ledger %+v", c, id, b.only(t))
		}
	})
	t.Run("a create stalled past the timeout is billed whole, covered", func(t *testing.T) {
		b := newBGServer(t, with(ModelFault{Kind: ModelStallHeaders, Delay: time.Second}))
		_, id, err := b.generate(t, "a", "", 300*time.Millisecond)
		g, u := b.waitDone(t), usageOf(err)
		if err == nil || id != "" || g.Output != 10 || u.OutputTokens < g.Output || u.InputTokens < g.Prompt {
			t.Fatalf("err %v id %q usage %+v, billed %+v", err, id, u, g)
		}
	})
	t.Run("a cut poll is free and read again", func(t *testing.T) {
		b := newBGServer(t, with(ModelFault{Kind: ModelCut, CutAfter: 2, OnPoll: true}))
		resp, _, err := b.generate(t, "a", "", 3*time.Second)
		g := b.only(t)
		rc, _ := b.tally.Receipt(g.ID())
		if err != nil || resp.Usage.OutputTokens != 10 || g.Output != 10 || !rc.Complete {
			t.Fatalf("err %v usage %+v, billed %+v, receipt %+v", err, resp.Usage, g, rc)
		}
	})
	t.Run("a poll stalled past the timeout cancels", func(t *testing.T) {
		p := with(ModelFault{Kind: ModelStallHeaders, Delay: 2 * time.Second, OnPoll: true})
		p.PerToken = 100 * time.Millisecond
		b := newBGServer(t, p)
		_, _, err := b.generate(t, "a", "", 400*time.Millisecond)
		g := b.only(t)
		if err == nil || !strings.HasPrefix(g.Outcome, "cancelled@") || g.Output >= 10 {
			t.Fatalf("err %v, billed %+v", err, g)
		}
	})
}

// TestTallyCountsGenerationsNotReads: a generation read whole by one
// worker and then read cut by another (a resume's poll) stays read whole.
func TestTallyCountsGenerationsNotReads(t *testing.T) {
	t.Parallel()
	tl := NewTally()
	tl.Received(Receipt{Gen: "aj/1/0", Complete: true, Where: "worker-a.1"})
	tl.Received(Receipt{Gen: "aj/1/0", Complete: true, Where: "worker-b.1"})
	tl.Received(Receipt{Gen: "aj/1/0", Where: "worker-b.1"})
	tl.Received(Receipt{Gen: "aj/2/0", Where: "worker-b.1"})
	if rc, _ := tl.Receipt("aj/1/0"); !rc.Complete {
		t.Fatalf("receipt %+v: a later cut read undid a whole one", rc)
	}
	if r := tl.Readers("aj/1/0"); !slices.Equal(r, []string{"worker-a.1", "worker-b.1"}) {
		t.Fatalf("readers %v", r)
	}
	if rc, _ := tl.Receipt("aj/2/0"); rc.Complete || len(tl.Readers("aj/2/0")) != 0 {
		t.Fatalf("a cut read counted whole: %+v", rc)
	}
}

// TestRunRoutesLoad: the run's routes are a configuration the engine
// accepts, the background route on a background provider.
func TestRunRoutesLoad(t *testing.T) {
	t.Parallel()
	c, err := config.Load(lookup(env("http://127.0.0.1:1", "p", "http://127.0.0.1:2", "worker-a.1")))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if _, ok := c.Routes[r]; !ok {
			t.Fatalf("no route %q", r)
		}
	}
	rung := c.Routes["background"].Rungs[0]
	if p := c.Providers[rung.Provider]; !p.Background || p.PollEvery != 100*time.Millisecond || rung.Model != "chaos-background" {
		t.Fatalf("background rung %+v on %+v", rung, p)
	}
	// The laned route: flex at half the price and slower, priority dearer
	// and faster, each p99 above its lane's fault-free answers.
	plain := c.Routes[lanedRoute].Rungs[0]
	flex, okF := plain.InLane(job.Flex)
	prio, okP := plain.InLane(job.Priority)
	if !okF || !okP || flex.Price.Cost(2, 2)*2 != plain.Price.Cost(2, 2) || prio.Price.Cost(4, 4) != plain.Price.Cost(7, 7) ||
		!(prio.P99() < plain.P99() && plain.P99() < flex.P99()) || flex.Timeout <= plain.Timeout {
		t.Fatalf("laned rung %+v", plain)
	}
	worst := func(pace float64) time.Duration {
		return time.Duration(pace * float64(300*time.Millisecond+40*100*time.Millisecond))
	}
	std, _ := plain.InLane(job.Standard)
	for _, l := range []job.Rung{flex, std, prio} {
		pace := map[job.Lane]float64{job.Flex: flexPace, job.Standard: 1, job.Priority: priorityPace}[l.Lane]
		if worst(pace) >= l.Timeout {
			t.Errorf("lane %s: a fault-free answer may take %s, its timeout is %s", l.Lane, worst(pace), l.Timeout)
		}
	}
}
