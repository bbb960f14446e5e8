package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// JobPlan is what the schedule does with one job: who creates it, when,
// with which request, and which job-level faults it meets.
type JobPlan struct {
	Index     int
	Tenant    string
	Key       string
	Route     string
	MaxTokens int
	// Budget is budget_cents ("" for the default).
	Budget string
	// Deadline is deadline_seconds (0 for the default).
	Deadline int
	// Lanes are the create's lanes (nil: any).
	Lanes []job.Lane
	// At is when the client creates the job, from the start of the load.
	At time.Duration
	// APIKilled: the API dies between PutItem and SendMessage; the client
	// never retries.
	APIKilled bool
	// Duplicates are raw copies of the job's message sent straight to the
	// queue, this long after the create.
	Duplicates []time.Duration
	// CancelAfter, when positive, is when the client cancels the job.
	CancelAfter time.Duration
	// Probes: the client also asks for another tenant's job (which must
	// answer 404) this many times.
	Probes int
}

// Content is the job's prompt for namespace ns ("aj" for aijobs, "bl" for
// the baseline): both have the same length, so the same billed tokens. A
// quarter of the jobs carry a document over the record's inline limit,
// so their inputs live in the payload store (docs/payloads.md) and every
// fault meets them there too; another quarter ask for an answer over the
// record's inline limit (the model server's answer_bytes knob), so their
// answers live there too.
func (p JobPlan) Content(ns string) string {
	c := fmt.Sprintf("[chaos %s %d] summarise item %d for %s", ns, p.Index, p.Index, p.Tenant)
	switch p.Index % 4 {
	case 3:
		c += strings.Repeat(" the attached document", largeWords)
	case 1:
		c += fmt.Sprintf(" [[fake:answer_bytes=%d]]", largeAnswerBytes)
	}
	return c
}

// largeAnswerBytes is a large-answer job's answer: over the 32 KiB a
// record keeps inline (finish.MaxInlineResult).
const largeAnswerBytes = 40 << 10

// largeWords makes a large job's prompt about 12 KB: over the 8 KiB a
// record keeps inline.
const largeWords = 550

// ID is the job's id at the API (tenants are namespaced jwt:<sub>).
func (p JobPlan) ID() string { return job.NewID("jwt:"+p.Tenant, p.Key) }

// ModelRates are the chances, per model request, of each model fault.
type ModelRates struct {
	StallHeaders, Cut, Trickle, RateLimited, Overloaded, Late float64

	// FlexRefused is the chance of a flex request's refusal for want of
	// capacity, drawn apart from the faults: it applies only to a request
	// made in the flex lane, and before its fault.
	FlexRefused float64

	// CacheHit is the share of jobs whose prompts the provider reads
	// partly from its prompt cache, on every request; Reasoning the
	// chance of a generation's output holding reasoning tokens;
	// PriorityAtStandard the chance of a priority request being served
	// at standard (the ramp limit). None is a fault: they change what a
	// generation costs, never whether it is answered.
	CacheHit, Reasoning, PriorityAtStandard float64
}

// Schedule is the seeded plan of a whole run.
type Schedule struct {
	Seed    Seed
	Jobs    []JobPlan
	Model   ModelRates
	Tenants []string
	Load    time.Duration
	Kills   []Kill
}

// Kill is a SIGKILL of a worker process at a time of the load phase.
type Kill struct {
	At      time.Duration
	Worker  int
	Restart time.Duration
}

// ScheduleOptions shape a schedule.
type ScheduleOptions struct {
	Seed    Seed
	Jobs    int
	Tenants int
	Load    time.Duration
	Model   ModelRates
	// Reserve is a job's worst case on its route (the API's reserve), for
	// budgets that cover one to a few attempts.
	Reserve func(route string, content string, maxTokens int) job.Nanocents
	// KillEvery is the mean time between SIGKILLs of a worker process.
	KillEvery time.Duration
}

// routes are env.go's, each given an equal share of the jobs.
var routes = []string{"default", "plain", "ladder", "background", "detached"}

// NewSchedule draws every job's plan from the seed.
func NewSchedule(o ScheduleOptions) *Schedule {
	s := &Schedule{Seed: o.Seed, Model: o.Model, Load: o.Load}
	for t := range o.Tenants {
		s.Tenants = append(s.Tenants, fmt.Sprintf("t%d", t))
	}
	sd := o.Seed
	var tenantOf []int
	for i := range o.Jobs {
		t := sd.Intn(o.Tenants, "tenant", i)
		p := JobPlan{Index: i, Key: fmt.Sprintf("k%d", i)}
		if i%10 == 1 && o.Tenants > 1 {
			// Another tenant uses the same Idempotency-Key: a different job.
			p.Key = s.Jobs[i-1].Key
			t = (tenantOf[i-1] + 1 + sd.Intn(o.Tenants-1, "tenant2", i)) % o.Tenants
		}
		tenantOf = append(tenantOf, t)
		p.Tenant = s.Tenants[t]
		p.Route = routes[sd.Intn(len(routes), "route", i)]
		p.MaxTokens = 16 + sd.Intn(49, "max_tokens", i)
		p.At = time.Duration((float64(i) + sd.Float("at", i)) / float64(o.Jobs) * float64(o.Load))
		s.Jobs = append(s.Jobs, p)
	}
	all := func(JobPlan) bool { return true }
	for _, i := range sd.pick(s.Jobs, 0.15, "budget", all) {
		p := &s.Jobs[i]
		r := o.Reserve(p.Route, p.Content("aj"), p.MaxTokens)
		p.Budget = job.Nanocents(float64(r) * (1 + 2.5*sd.Float("budget_x", i))).String()
	}
	for _, i := range sd.pick(s.Jobs, 0.08, "deadline", all) {
		s.Jobs[i].Deadline = 3 + sd.Intn(13, "deadline_s", i)
	}
	s.drawLanes()
	for i := range s.Jobs {
		if _, limited := spendLimits[s.Jobs[i].Tenant]; limited && s.Jobs[i].Deadline == 0 {
			s.Jobs[i].Deadline = spendDeadline(sd, i)
		}
	}
	// Lost messages only in the first half of the load, so the
	// reconciler's bound has passed before the run ends.
	for _, i := range sd.pick(s.Jobs, 0.02, "api_kill", func(p JobPlan) bool { return p.At < o.Load/2 }) {
		s.Jobs[i].APIKilled = true
	}
	for _, i := range sd.pick(s.Jobs, 0.06, "dup", func(p JobPlan) bool { return !p.APIKilled }) {
		for d := range 1 + sd.Intn(3, "dups", i) {
			s.Jobs[i].Duplicates = append(s.Jobs[i].Duplicates, sd.Between(0, 8*time.Second, "dup_at", i, d))
		}
	}
	for _, i := range sd.pick(s.Jobs, 0.04, "cancel", func(p JobPlan) bool { return !p.APIKilled }) {
		s.Jobs[i].CancelAfter = sd.Between(200*time.Millisecond, 3*time.Second, "cancel_at", i)
	}
	for _, i := range sd.pick(s.Jobs, 0.1, "probe", all) {
		s.Jobs[i].Probes = 1
	}
	for at, k := time.Duration(0), 0; o.KillEvery > 0; k++ {
		at += sd.Between(o.KillEvery/2, o.KillEvery*3/2, "kill_at", k)
		if at >= o.Load {
			break
		}
		s.Kills = append(s.Kills, Kill{At: at, Worker: sd.Intn(2, "kill_worker", k), Restart: sd.Between(300*time.Millisecond, 2*time.Second, "restart", k)})
	}
	if len(s.Kills) == 0 && o.KillEvery > 0 {
		s.Kills = []Kill{{At: o.Load / 2, Worker: sd.Intn(2, "kill_worker", 0), Restart: time.Second}}
	}
	return s
}

// lanedRoute is the route whose rung offers flex and priority (env.go).
const lanedRoute = "plain"

// drawLanes gives some of the laned route's jobs what makes them choose
// another lane than flex, or forbids them any other. Left to
// NewSchedule's other draws, nearly all of them would have the default
// deadline (15 minutes), and every one would take flex: 40% of those get
// a deadline of 3 to 12 s instead, about the lanes' p99s (priority 2 s,
// standard 3.7 s, flex 7.5 s), so the time left at a claim picks each
// lane; a tenth of the rest allow flex alone, so a refusal with no lane
// left is a wait (job.Defer). Each draw has its own name: the other
// draws, the routes' included, are those of a run without lanes.
func (s *Schedule) drawLanes() {
	sd := s.Seed
	laned := func(p JobPlan) bool { return p.Route == lanedRoute && p.Deadline == 0 }
	for _, i := range sd.pick(s.Jobs, 0.4, "lane_deadline", laned) {
		s.Jobs[i].Deadline = 3 + sd.Intn(10, "lane_deadline_s", i)
	}
	for _, i := range sd.pick(s.Jobs, 0.1, "flex_only", laned) {
		s.Jobs[i].Lanes = []job.Lane{job.Flex}
	}
}

// Gen is the plan of the seq-th model request of job index (the same in
// both namespaces, so the baseline faces the same model faults).
func (s *Schedule) Gen(_ string, index, seq int) GenPlan {
	sd := s.Seed
	p := GenPlan{
		Tokens:   8 + sd.Intn(33, "tokens", index, seq),
		Prefill:  sd.Between(50*time.Millisecond, 300*time.Millisecond, "prefill", index, seq),
		PerToken: sd.Between(30*time.Millisecond, 100*time.Millisecond, "per_token", index, seq),
		// Drawn apart from the faults, so they are those of a run
		// without lanes.
		FlexRefused: sd.Float("flex_refuse", index, seq) < s.Model.FlexRefused,
		AtStandard:  sd.Float("at_standard", index, seq) < s.Model.PriorityAtStandard,
	}
	// The cache is the job's: its prompt's prefix is cached or not,
	// whichever request reads it.
	if sd.Float("cache_hit", index) < s.Model.CacheHit {
		p.CachedPart = 0.25 + 0.7*sd.Float("cache_part", index)
	}
	if sd.Float("reasoning", index, seq) < s.Model.Reasoning {
		p.ReasoningPart = 0.2 + 0.6*sd.Float("reasoning_part", index, seq)
	}
	u, r := sd.Float("model_fault", index, seq), s.Model
	switch {
	case u < r.StallHeaders:
		p.Fault = ModelFault{Kind: ModelStallHeaders, Delay: sd.Between(1500*time.Millisecond, 9*time.Second, "stall", index, seq),
			OnPoll: sd.Float("on_poll", index, seq) < 0.5}
	case u < r.StallHeaders+r.Cut:
		cut := -1
		if sd.Float("cut_where", index, seq) > 1.0/3 {
			cut = sd.Intn(p.Tokens, "cut_at", index, seq)
		}
		p.Fault = ModelFault{Kind: ModelCut, CutAfter: cut, OnPoll: sd.Float("on_poll", index, seq) < 0.5}
	case u < r.StallHeaders+r.Cut+r.Trickle:
		p.Fault = ModelFault{Kind: ModelTrickle}
		p.PerToken = sd.Between(250*time.Millisecond, 700*time.Millisecond, "trickle", index, seq)
	case u < r.StallHeaders+r.Cut+r.Trickle+r.RateLimited:
		p.Fault = ModelFault{Kind: ModelRateLimited, RetryAfter: 1 + sd.Intn(3, "retry_after", index, seq)}
	case u < r.StallHeaders+r.Cut+r.Trickle+r.RateLimited+r.Overloaded:
		p.Fault = ModelFault{Kind: ModelOverloaded, Status: []int{529, 503}[sd.Intn(2, "overloaded", index, seq)]}
	case u < r.StallHeaders+r.Cut+r.Trickle+r.RateLimited+r.Overloaded+r.Late:
		// Slow enough to outlast the rung's timeout (at most 6 s here),
		// then finished and billed.
		p.Fault = ModelFault{Kind: ModelLate, Total: sd.Between(6500*time.Millisecond, 10*time.Second, "late", index, seq)}
	}
	return p
}

// pick chooses frac of the jobs that pass ok (at least one), by the seed:
// every job-level fault is in every run, however short.
func (s Seed) pick(jobs []JobPlan, frac float64, what string, ok func(JobPlan) bool) []int {
	var idx []int
	for i, p := range jobs {
		if ok(p) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	sort.Slice(idx, func(a, b int) bool { return s.Uint(what, idx[a]) < s.Uint(what, idx[b]) })
	return idx[:max(1, int(frac*float64(len(idx))+0.5))]
}
