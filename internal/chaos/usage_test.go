package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// partsPlan hits the prompt cache for half the prompt and reasons for
// half the output.
var partsPlan = GenPlan{Tokens: 10, Prefill: 10 * time.Millisecond, PerToken: 5 * time.Millisecond, CachedPart: 0.5, ReasoningPart: 0.5}

// TestModelServerReportsUsageParts: cached prompt tokens are reported in
// every shape, as a part of the prompt's count, and reasoning tokens as a
// part of a non-streamed answer's output, which shows only the visible
// rest; the provider's usage is the ledger's, part for part.
func TestModelServerReportsUsageParts(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		resp, g, rc, err := call(t, partsPlan, stream, 5*time.Second)
		wantReasoning := int64(5)
		if stream {
			wantReasoning = 0 // a stream reports none (reasoningTokens)
		}
		u := resp.Usage
		if err != nil || !rc.Complete || g.Cached != g.Prompt/2 || g.Cached == 0 || g.Reasoning != wantReasoning || g.Output != 10 ||
			u.InputTokens != g.Prompt || u.CachedInputTokens != g.Cached || u.OutputTokens != 10 || u.ReasoningTokens != g.Reasoning {
			t.Fatalf("stream=%v: err %v, provider usage %+v, ledger %+v", stream, err, u, g)
		}
		if resp.Output != strings.Repeat("tok ", int(10-wantReasoning)) || resp.Served != job.Standard {
			t.Fatalf("stream=%v: output %q served %q", stream, resp.Output, resp.Served)
		}
	}
	b := newBGServer(t, partsPlan)
	resp, _, err := b.generate(t, "a", "", 5*time.Second)
	g := b.only(t)
	if err != nil || g.Cached == 0 || g.Reasoning != 5 || resp.Usage != (model.Usage{InputTokens: g.Prompt, CachedInputTokens: g.Cached,
		OutputTokens: 10, ReasoningTokens: 5}) || resp.Output != strings.Repeat("tok ", 5) || resp.Served != job.Standard {
		t.Fatalf("background: err %v, provider usage %+v output %q served %q, ledger %+v", err, resp.Usage, resp.Output, resp.Served, g)
	}
}

// TestPriorityServedAtStandard: a priority request the plan serves at
// standard is answered service_tier "default" at standard's pace, kept
// in the ledger as asked in priority and served at standard; the plan's
// flag changes nothing in another lane.
func TestPriorityServedAtStandard(t *testing.T) {
	t.Parallel()
	p := partsPlan
	p.AtStandard = true
	resp, g, rc, err := callIn(t, p, false, 5*time.Second, job.Priority)
	if err != nil || !rc.Complete || resp.Served != job.Standard || g.Lane != job.Priority || g.Served != job.Standard || !g.AtStandard() {
		t.Fatalf("err %v served %q, ledger %+v", err, resp.Served, g)
	}
	if d := g.End.Sub(g.Start); d < p.Prefill+time.Duration(p.Tokens)*p.PerToken {
		t.Fatalf("served at standard in %s: faster than standard's pace", d)
	}
	if q := laned(&Generation{}, p, job.Flex); q != p.inLane(job.Flex) {
		t.Fatalf("a flex request paced %+v", q)
	}
	resp, g, _, err = callIn(t, p, true, 5*time.Second, job.Flex)
	if err != nil || resp.Served != job.Flex || g.Served != job.Flex || g.AtStandard() {
		t.Fatalf("flex: err %v served %q, ledger %+v", err, resp.Served, g)
	}
}

// TestLedgerPricesWhatServed: the ledger bills a generation with
// job.Price.Bill at the price of the lane that served it, cached tokens
// at the route's cached input rate, as the worker prices the provider's
// answer (job.Rung.Served); a priority generation served at standard
// costs the standard price and saves nothing.
func TestLedgerPricesWhatServed(t *testing.T) {
	t.Parallel()
	c, err := config.Load(lookup(env("http://127.0.0.1:1", "p", "http://127.0.0.1:2", "worker-a.1")))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{cfg: c}
	plain := c.Routes[lanedRoute].Rungs[0]
	prio, _ := plain.InLane(job.Priority)
	if plain.Price.CachedInputPerToken*10 != plain.Price.InputPerToken || prio.Price.CachedInputPerToken*10 != prio.Price.InputPerToken {
		t.Fatalf("cached input is not a tenth of the input: %+v, %+v", plain.Price, prio.Price)
	}
	g := Generation{NS: "aj", Model: plain.Model, Prompt: 10, Cached: 4, Output: 20, Reasoning: 5, Lane: job.Priority, Served: job.Standard}
	f := jobFacts{gens: []Generation{g}}
	f.bill(h.prices(), NewTally())
	u := model.Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 20, ReasoningTokens: 5}
	if want := u.Cost(prio.Served(job.Standard).Price); f.billed != want || f.saved != 0 || f.billed >= plain.Price.Cost(10, 20) {
		t.Fatalf("billed %s saved %s, want %s saved 0 (below %s uncached)", f.billed, f.saved, want, plain.Price.Cost(10, 20))
	}
	g.Served = job.Priority
	f = jobFacts{gens: []Generation{g}}
	f.bill(h.prices(), NewTally())
	if want := u.Cost(prio.Price); f.billed != want || f.saved != u.Saved(prio) || f.saved >= 0 {
		t.Fatalf("in priority: billed %s saved %s, want %s saved %s", f.billed, f.saved, want, u.Saved(prio))
	}
	var r Report
	r.AijobsBilled = 1
	r.countUsage([]Generation{g, {NS: "aj", Model: plain.Model, Prompt: 10, Output: 3, Lane: job.Priority, Served: job.Standard}}, h.prices())
	if r.Usage != (UsageCount{Cached: 1, Reasoning: 1, CachedTokens: 4, CacheSaved: 4 * (prio.Price.InputPerToken - prio.Price.CachedInputPerToken),
		Priority: 2, AtStandard: 1}) {
		t.Fatalf("usage counts %+v", r.Usage)
	}
}
