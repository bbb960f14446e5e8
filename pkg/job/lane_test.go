package job_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// laned is a rung offering the three lanes: flex at half the standard
// price and slow, priority at 1.75 times and fast.
func laned() job.Rung {
	std := job.Price{InputPerToken: 10, OutputPerToken: 40}
	g := job.Rung{Provider: "oa", Model: "m", Price: std, Timeout: 30 * time.Second, Completion: 10 * time.Second}
	flex, prio := g, g
	flex.Lane, flex.Base, flex.Price, flex.Timeout, flex.Completion = job.Flex, std, job.Price{InputPerToken: 5, OutputPerToken: 20}, 2*time.Minute, time.Minute
	prio.Lane, prio.Base, prio.Price, prio.Completion = job.Priority, std, job.Price{InputPerToken: 17, OutputPerToken: 70}, 4*time.Second
	g.Lanes = []job.Rung{prio, flex}
	return g
}

func lanesOf(rs []job.Rung) []job.Lane {
	out := []job.Lane{}
	for _, r := range rs {
		out = append(out, r.Lane)
	}
	return out
}

func TestPlanIsTheCheapestLanesThatFitTheDeadline(t *testing.T) {
	g := laned()
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 100}
	plenty := job.Nanocents(1e9)
	tests := []struct {
		name  string
		lanes []job.Lane
		left  time.Duration
		avail job.Nanocents
		want  []job.Lane
	}{
		{"time to spare: cheapest first", nil, time.Hour, plenty, []job.Lane{job.Flex, job.Standard, job.Priority}},
		{"flex's p99 does not fit", nil, 30 * time.Second, plenty, []job.Lane{job.Standard, job.Priority}},
		{"only priority's fits", nil, 5 * time.Second, plenty, []job.Lane{job.Priority}},
		{"none fits: the fastest, alone", nil, time.Second, plenty, []job.Lane{job.Priority}},
		{"the job forbids flex", []job.Lane{job.Standard, job.Priority}, time.Hour, plenty, []job.Lane{job.Standard, job.Priority}},
		{"the job asks for flex only", []job.Lane{job.Flex}, time.Hour, plenty, []job.Lane{job.Flex}},
		{"flex only, too slow: still flex", []job.Lane{job.Flex}, time.Second, plenty, []job.Lane{job.Flex}},
		{"the budget covers flex only", nil, time.Hour, g.Lanes[1].WorstCase(in), []job.Lane{job.Flex}},
		{"the budget covers flex only and it is too slow", nil, time.Second, g.Lanes[1].WorstCase(in), []job.Lane{job.Flex}},
		{"the budget covers nothing", nil, time.Hour, 1, []job.Lane{}},
	}
	for _, tt := range tests {
		if got := lanesOf(g.Plan(in, tt.lanes, tt.left, tt.avail)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: plan %v, want %v", tt.name, got, tt.want)
		}
	}
	plain := job.Rung{Provider: "a", Price: job.Price{InputPerToken: 1}, Timeout: time.Second}
	if got := lanesOf(plain.Plan(in, nil, time.Hour, plenty)); !slices.Equal(got, []job.Lane{job.Standard}) {
		t.Errorf("a rung without lanes plans %v, want its standard lane", got)
	}
}

func TestSavedIsMeasuredAgainstTheStandardPrice(t *testing.T) {
	g := laned()
	if got := g.Lanes[1].Saved(job.Tokens{Input: 100, Output: 10}); got != (100*10+10*40)-(100*5+10*20) {
		t.Errorf("flex saved %d", got)
	}
	if got := g.Lanes[0].Saved(job.Tokens{Input: 100, Output: 10}); got != (100*10+10*40)-(100*17+10*70) {
		t.Errorf("priority saved %d, want the (negative) premium", got)
	}
	if got := g.Offers()[0].Saved(job.Tokens{Input: 100, Output: 10}); got != 0 {
		t.Errorf("standard saved %d, want 0", got)
	}
}

func TestACallIsPricedAtTheLaneThatServedIt(t *testing.T) {
	g := laned()
	prio := g.Lanes[0]
	used := job.Tokens{Input: 100, Output: 10}
	down := prio.Served(job.Standard)
	if down.Price != g.Price || down.Saved(used) != 0 || down.Lane != job.Standard {
		t.Errorf("a priority call served at standard is priced %+v in %q, saving %d; want the standard price, nothing saved",
			down.Price, down.Lane, down.Saved(used))
	}
	for _, l := range []job.Lane{"", job.Priority} {
		if got := prio.Served(l); got.Price != prio.Price || got.Lane != job.Priority {
			t.Errorf("served %q: priced %+v in %q, want the priority lane as asked", l, got.Price, got.Lane)
		}
	}
	if got := g.Offers()[0].Served(job.Standard); got.Price != g.Price {
		t.Errorf("a standard call served at standard is priced %+v", got.Price)
	}
}

func TestReserveIsTheCheapestAllowedLaneOfTheFirstRungOffering(t *testing.T) {
	g := laned()
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "hello"}}, MaxTokens: 100}
	plain := job.Rung{Provider: "b", Price: job.Price{InputPerToken: 1, OutputPerToken: 1}, Timeout: time.Second}
	r := job.Route{Rungs: []job.Rung{g, plain}, FallbackOn: []job.ErrorClass{job.Timeout}}
	if got, want := r.Reserve(in, nil), g.Lanes[1].WorstCase(in); got != want {
		t.Errorf("any lane: reserve %s, want flex's %s", got, want)
	}
	if got, want := r.Reserve(in, []job.Lane{job.Priority, job.Standard}), g.WorstCase(in); got != want {
		t.Errorf("no flex: reserve %s, want standard's %s", got, want)
	}
	r = job.Route{Rungs: []job.Rung{plain, g}, FallbackOn: []job.ErrorClass{job.Timeout}}
	if got, want := r.Reserve(in, []job.Lane{job.Flex}), g.Lanes[1].WorstCase(in); got != want {
		t.Errorf("flex only, first rung without it: reserve %s, want the second rung's flex %s", got, want)
	}
	if err := r.CheckOffered("default", []job.Lane{job.Flex}); err != nil {
		t.Errorf("flex is offered by the second rung: %v", err)
	}
	only := job.Route{Rungs: []job.Rung{plain}}
	err := only.CheckOffered("cheap", []job.Lane{job.Flex, job.Priority})
	if job.ErrorCode(err) != job.CodeInvalidRequest || !strings.Contains(err.Error(), "offers: standard") {
		t.Errorf("a route without the lanes asked for: %v", err)
	}
	if got := r.Timeout(); got != time.Second+30*time.Second+2*time.Minute+30*time.Second {
		t.Errorf("route timeout %s, want every lane's", got)
	}
}

func TestCheckLanes(t *testing.T) {
	for _, ok := range [][]job.Lane{nil, {job.Flex}, {job.Standard, job.Priority, job.Flex}} {
		if err := job.CheckLanes(ok); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
	for _, bad := range [][]job.Lane{{"turbo"}, {job.Flex, job.Flex}, {""}} {
		if err := job.CheckLanes(bad); job.ErrorCode(err) != job.CodeInvalidRequest {
			t.Errorf("%v: %v, want invalid_request", bad, err)
		}
	}
}

// The providers a collector builds are those of the routes' batch lanes,
// each once, and no other: a rung's flex lane or a route without a batch
// lane names none.
func TestBatchLaneProviders(t *testing.T) {
	batched := func(provider string) job.Rung {
		g := laned()
		g.Provider = provider
		b := g
		b.Lane, b.Base, b.Lanes = job.Batch, g.Price, nil
		g.Lanes = append(g.Lanes, b)
		return g
	}
	routes := map[string]job.Route{
		"plain":   {Rungs: []job.Rung{laned()}},
		"cheap":   {Rungs: []job.Rung{laned(), batched("fake-b")}},
		"nightly": {Rungs: []job.Rung{batched("fake-a"), batched("fake-b")}},
	}
	if got := job.BatchLaneProviders(routes); !slices.Equal(got, []string{"fake-a", "fake-b"}) || !job.AnyBatchLane(routes) {
		t.Errorf("BatchLaneProviders = %v, want [fake-a fake-b]", got)
	}
	delete(routes, "cheap")
	delete(routes, "nightly")
	if got := job.BatchLaneProviders(routes); len(got) != 0 || job.AnyBatchLane(routes) {
		t.Errorf("without a batch lane: %v, want none", got)
	}
}
