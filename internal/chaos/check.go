package chaos

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// Invariant is one checked promise: how many cases were checked, how many
// broke it, a note on the cases that passed by a rule other than the
// plain one, and a diagnosis of each failure.
type Invariant struct {
	N        int
	Name     string
	Checked  int
	Failed   int
	Note     string
	Failures []string
}

// estimated reports whether the job's view, as its client reads it, says
// its cost includes an estimate of usage the provider never reported.
func estimated(j job.Job) bool { return wire.NewView(j).CostEstimated }

type jobFacts struct {
	run    *jobRun
	rec    job.Job
	has    bool
	gens   []Generation
	billed job.Nanocents
	// saved is what the bill's generations cost less than at their rungs'
	// standard prices, as saved_nc on the record should say.
	saved job.Nanocents
	// inflight is what the bill holds for stream tokens the server sent
	// but the client never read, because it had given up.
	inflight job.Nanocents
	// received counts the generations a client read whole.
	received int
	dlq      int
	changed  time.Time
}

// laneKey names a price: a model (unique per rung) in a lane.
type laneKey struct {
	model string
	lane  job.Lane
}

// priced is how the ledger prices a generation: at the price of the lane
// that served it, and against its rung's standard price for what the
// lane saved. Both bill the cached part of the prompt at its own rate
// (job.Price.Bill), as the provider does.
type priced struct{ price, standard job.Price }

func (p priced) cost(t job.Tokens) job.Nanocents { return p.price.Bill(t) }

func (p priced) saved(t job.Tokens) job.Nanocents {
	return p.standard.Bill(t) - p.price.Bill(t)
}

// prices are the routes' prices by model and lane: a generation is billed
// at the price the route declares for the lane that served it (the
// answer's service_tier: a priority request past the ramp limit is billed
// at standard), as the worker records it, so invariant 3 stays exact.
func (h *harness) prices() map[laneKey]priced {
	p := map[laneKey]priced{}
	for _, r := range h.cfg.Routes {
		for _, g := range r.Rungs {
			for _, o := range g.Offers() {
				p[laneKey{g.Model, o.Lane}] = priced{price: o.Price, standard: g.Price}
			}
		}
	}
	return p
}

// describe is a failing job's diagnosis: its plan, record, every
// generation the model server billed for it, and the faults it met.
func (h *harness) describe(f jobFacts) string {
	p := f.run.plan
	var b strings.Builder
	fmt.Fprintf(&b, "%s (#%d %s route=%s", f.run.id, p.Index, p.Tenant, p.Route)
	if p.Budget != "" {
		fmt.Fprintf(&b, " budget=%s", p.Budget)
	}
	if p.Deadline > 0 {
		fmt.Fprintf(&b, " deadline=%ds", p.Deadline)
	}
	if len(p.Lanes) > 0 {
		fmt.Fprintf(&b, " lanes=%v", p.Lanes)
	}
	if p.CancelAfter > 0 {
		fmt.Fprintf(&b, " cancel@%s", p.CancelAfter.Round(time.Millisecond))
	}
	b.WriteString(")")
	if f.has {
		j := f.rec
		fmt.Fprintf(&b, " record: %s", j.State)
		if j.ErrorClass != "" {
			fmt.Fprintf(&b, "/%s", j.ErrorClass)
		}
		fmt.Fprintf(&b, " attempts=%d cost=%s held=%s budget=%s saved=%s lane=%s v%d", j.Attempts, j.Cost, j.Held, j.Budget, j.Saved, j.ResultLane, j.Version)
	} else {
		b.WriteString(" no record")
	}
	fmt.Fprintf(&b, "; model billed %s over %d requests:", f.billed, len(f.gens))
	for _, g := range f.gens {
		kind := "plain"
		switch {
		case g.Stream:
			kind = "stream"
		case g.Background:
			kind = "background"
		}
		fault := g.Fault
		if fault == "" {
			fault = "ok"
		}
		recv := "client saw no answer"
		if g.Background {
			recv = "no client read it completed"
		}
		if rc, ok := h.tally.Receipt(g.ID()); ok {
			switch {
			case rc.Complete && g.Background:
				recv = "read whole by " + strings.Join(h.tally.Readers(g.ID()), " and ")
			case rc.Complete:
				recv = "client read it all"
			case g.Stream:
				recv = fmt.Sprintf("client read %d chunks", rc.Chunks)
			default:
				recv = "client read part of it"
			}
		}
		fmt.Fprintf(&b, " [#%d %s %s/%s %s %s +%s %s, %s, billed %s tok]", g.Seq, g.Who, g.Model, laneServed(g), kind, g.Start.Format("15:04:05.000"),
			g.End.Sub(g.Start).Round(time.Millisecond), fault+"->"+g.Outcome, recv, billedTokens(g))
	}
	if fs := h.tally.Of(f.run.id); len(fs) > 0 {
		fmt.Fprintf(&b, "; faults: %s", strings.Join(fs, ", "))
	}
	if f.dlq > 0 {
		fmt.Fprintf(&b, "; %d message(s) in the dead letter queue", f.dlq)
	}
	return b.String()
}

// laneServed is g's lane as the diagnosis names it: the lane asked, and
// the one that served it when another did.
func laneServed(g Generation) string {
	if l := g.ServedLane(); l != g.Lane {
		return fmt.Sprintf("%s(served %s)", g.Lane, l)
	}
	return string(g.Lane)
}

// billedTokens is g's billed counts, with their cached and reasoning
// parts when it has any.
func billedTokens(g Generation) string {
	s := fmt.Sprintf("%d+%d", g.Prompt, g.Output)
	if g.Cached > 0 || g.Reasoning > 0 {
		s += fmt.Sprintf(" (%d cached, %d reasoning)", g.Cached, g.Reasoning)
	}
	return s
}

// check evaluates the seven invariants over what the run left behind.
func (h *harness) check(records map[string]job.Job, changed map[string]time.Time, emptied time.Time, dlq map[string]int) *Report {
	// The documented bound counts a sweep as instant; a loaded machine's
	// sweep is not (one took over 2 minutes beside a second make test,
	// and a lost job was touched 9 s past the bound), so the longest sweep
	// the run measured is added: the recovery promised is the
	// reconciler's, at the speed this machine ran it.
	h.sweepsMu.Lock()
	longest := h.longestSweep
	h.sweepsMu.Unlock()
	v := newInvariants(time.Now(), Bound(h.cfg)+longest, emptied, h.describe)
	rep, gens := h.newReport(v.bound)
	deadLettered(rep, records, dlq)
	facts := h.facts(records, changed, dlq, gens)
	for _, f := range facts {
		v.checkJob(rep, f)
		h.byRoute(rep, f)
		rep.byLane(f)
	}
	v.notes()
	v.checkClients(h.clients)
	h.timeToEnd(rep)
	rep.Succeeded = rep.States[string(job.Succeeded)]
	spend, tenants := h.checkSpend(facts, readSpendLogs(h.logDir))
	rep.Invariants, rep.Spend = append(v.list(), spend), tenants
	return rep
}

// newReport starts the report with what the run was and each side's
// billed generations. It reads the model server's ledger once and returns
// it, so the per-job bills add up to the counts reported here even if a
// late generation lands meanwhile.
func (h *harness) newReport(bound time.Duration) (*Report, []Generation) {
	h.sweepsMu.Lock()
	sweeps := slices.Clone(h.sweeps)
	h.sweepsMu.Unlock()
	rep := &Report{Seed: h.opts.Seed, Jobs: h.opts.Jobs, Tenants: h.opts.Tenants, Load: h.opts.Load, LogDir: h.logDir, Bound: bound,
		Faults: h.tally.Counts(), States: map[string]int{}, Sweeps: sweeps}
	rep.Routes = map[string]*RouteCount{}
	for _, r := range routes {
		rep.Routes[r] = &RouteCount{}
	}
	gens := h.model.srv.Generations()
	rep.countLanes(gens, h.prices())
	rep.countUsage(gens, h.prices())
	for _, g := range gens {
		if !g.Billed() {
			continue
		}
		rc := rep.route(h.sched, g.Index)
		if g.NS == "aj" {
			rep.AijobsBilled++
			rc.AijobsBilled++
		} else {
			rep.BaselineBilled++
			rc.BaselineBilled++
		}
	}
	rep.BaselineSucceeded = h.baseline.Succeeded()
	for _, i := range h.baseline.SucceededJobs() {
		rep.route(h.sched, i).BaselineSucceeded++
	}
	return rep, gens
}

// route is the counts of job index's route (a scratch one for an index
// the schedule does not have, which no line reports).
func (r *Report) route(s *Schedule, index int) *RouteCount {
	if index < 0 || index >= len(s.Jobs) || r.Routes[s.Jobs[index].Route] == nil {
		return &RouteCount{}
	}
	return r.Routes[s.Jobs[index].Route]
}

// byRoute counts a job's success by its route, and its resumed
// generations: background generations read whole by a worker incarnation
// other than the one that made it. Only the one that made it could have
// read it by its own call; another read it by resuming it (a killed
// worker's, or one cut off from its lease). The ledger and the receipts
// say so, whatever the worker's logs say.
func (h *harness) byRoute(rep *Report, f jobFacts) {
	succeeded := f.has && f.rec.State == job.Succeeded
	if succeeded {
		rep.route(h.sched, f.run.plan.Index).Succeeded++
	}
	for _, g := range f.gens {
		if !g.Background || !g.Billed() {
			continue
		}
		readers := h.tally.Readers(g.ID())
		if len(readers) > 0 {
			rep.BackgroundRead++
		}
		if slices.ContainsFunc(readers, func(w string) bool { return w != g.Who }) {
			rep.Resumed++
			if succeeded && f.received == 1 {
				rep.ResumedJobs++
			}
		}
	}
}

// deadLettered lists the jobs whose messages are in the dead letter queue
// (SQS gave up on them, or a worker handed them off there) with the state
// each ended in: a dead-lettered message is not a failure by itself, the
// job's state says whether anything was lost with it.
func deadLettered(rep *Report, records map[string]job.Job, dlq map[string]int) {
	for id, n := range dlq {
		rep.DeadLettered += n
		state := "no such job"
		if j, ok := records[id]; ok {
			state = string(j.State)
			if j.ErrorClass != "" {
				state += "/" + string(j.ErrorClass)
			}
		}
		rep.DeadLetteredJobs = append(rep.DeadLetteredJobs, fmt.Sprintf("%s (%d, job %s)", id, n, state))
	}
	slices.Sort(rep.DeadLetteredJobs)
}

// facts joins, for each job the clients drove, its record with what the
// model server billed for it: the invariants compare the two.
func (h *harness) facts(records map[string]job.Job, changed map[string]time.Time, dlq map[string]int, gens []Generation) []jobFacts {
	prices := h.prices()
	byJob := map[string][]Generation{}
	for _, g := range gens {
		key := fmt.Sprintf("%s/%d", g.NS, g.Index)
		byJob[key] = append(byJob[key], g)
	}
	var facts []jobFacts
	for _, r := range h.clients.runs {
		f := jobFacts{run: r, gens: byJob[fmt.Sprintf("aj/%d", r.plan.Index)], dlq: dlq[r.id], changed: changed[r.id]}
		f.rec, f.has = records[r.id]
		f.bill(prices, h.tally)
		facts = append(facts, f)
	}
	return facts
}

// bill adds up what the model billed for the job, and which of it its
// clients read: only the client side can tell a generation received from
// one the server sent to nobody.
func (f *jobFacts) bill(prices map[laneKey]priced, tally *Tally) {
	for _, g := range f.gens {
		p := prices[laneKey{g.Model, g.ServedLane()}]
		f.billed += p.cost(g.Tokens())
		f.saved += p.saved(g.Tokens())
		rc, ok := tally.Receipt(g.ID())
		if ok && rc.Complete {
			f.received++
		}
		// A stream's tokens the client never read (none when it never
		// saw the headers) were sent after it had left.
		if g.Stream && !rc.Complete && g.Output > int64(rc.Chunks) {
			f.inflight += p.cost(job.Tokens{Output: g.Output - int64(rc.Chunks)})
		}
	}
}

// invariants are the six invariants while the check fills them in, with
// the counters the first three's notes report: the cases that passed by a
// rule other than the plain one are counted, not hidden.
type invariants struct {
	recovery, success, cost, budget, order, isolation Invariant

	now, emptied time.Time
	bound        time.Duration
	describe     func(jobFacts) string

	pending, lost             int // invariant 1
	multi                     int // invariant 2
	exact, race, over, marked int // invariant 3
	recorded, billed          job.Nanocents
}

func newInvariants(now time.Time, bound time.Duration, emptied time.Time, describe func(jobFacts) string) *invariants {
	return &invariants{
		recovery:  Invariant{N: 1, Name: "every accepted job is terminal or recoverable within the bound"},
		success:   Invariant{N: 2, Name: "every succeeded job has exactly one successful generation"},
		cost:      Invariant{N: 3, Name: "a finished job holds nothing, and its cost is the model's bill (or at least it, estimated)"},
		budget:    Invariant{N: 4, Name: "no job's cost exceeds its budget (record and bill)"},
		order:     Invariant{N: 5, Name: "pollers saw version and updated_at only move forward"},
		isolation: Invariant{N: 6, Name: "no tenant saw another tenant's job"},
		now:       now, bound: bound, emptied: emptied, describe: describe,
	}
}

func (i *Invariant) fail(s string) {
	i.Failed++
	i.Failures = append(i.Failures, s)
}

// checkJob holds one job to the invariants the records and the bill can
// settle (1 to 4); a job never accepted promised nothing, and is only
// counted.
func (v *invariants) checkJob(rep *Report, f jobFacts) {
	r := f.run
	r.mu.Lock()
	accepted, lostAt, touchedAt := r.accepted, r.lostAt, r.touchedAt
	r.mu.Unlock()
	if !f.has {
		if accepted {
			v.recovery.Checked++
			v.recovery.fail("accepted but no record: " + v.describe(f))
		} else {
			rep.States["never accepted"]++
		}
		return
	}
	if f.rec.State.Terminal() {
		rep.States[string(f.rec.State)]++
	} else {
		rep.States["unfinished"]++
	}
	v.checkRecovery(f, lostAt, touchedAt)
	v.checkSuccess(f)
	v.checkCost(f)
	v.checkBudget(f)
}

// checkRecovery is invariant 1: a job still unfinished is stuck only once
// it has been untouched for longer than the bound since the queue emptied
// (before that it may be waiting its turn), and a job whose message the
// API never sent must be found by the reconciler within the bound.
func (v *invariants) checkRecovery(f jobFacts, lostAt, touchedAt time.Time) {
	v.recovery.Checked++
	if !f.rec.State.Terminal() {
		switch age := v.now.Sub(later(f.changed, v.emptied)); {
		case v.emptied.IsZero():
			v.recovery.fail(fmt.Sprintf("unfinished after the run's %s drain, the queue never empty: %s", drainCap, v.describe(f)))
		case age > v.bound:
			v.recovery.fail(fmt.Sprintf("unfinished and untouched for %s > %s since the queue emptied: %s", age.Round(time.Second), v.bound, v.describe(f)))
		default:
			v.pending++
		}
	}
	if !lostAt.IsZero() {
		v.lost++
		end := touchedAt
		if end.IsZero() {
			end = v.now
		}
		if d := end.Sub(lostAt); d > v.bound {
			v.recovery.fail(fmt.Sprintf("message lost at create, first touched after %s > %s: %s", d.Round(time.Second), v.bound, v.describe(f)))
		}
	}
}

// checkSuccess is invariant 2, which promises nothing of a job that did
// not succeed; one read whole more than once is counted for the note all
// the same, so a run shows how often answers were read and not kept.
func (v *invariants) checkSuccess(f jobFacts) {
	if f.rec.State == job.Succeeded {
		v.success.Checked++
		if f.received != 1 {
			v.success.fail(fmt.Sprintf("%d successful generations: %s", f.received, v.describe(f)))
		}
	} else if f.received > 1 {
		v.multi++
	}
}

// checkCost is invariant 3: a finished job's cost is the bill, above it
// only when marked estimated, below it only by stream tokens the client
// never read.
func (v *invariants) checkCost(f jobFacts) {
	j := f.rec
	if !j.State.Terminal() {
		return
	}
	v.cost.Checked++
	v.recorded, v.billed = v.recorded+j.Cost, v.billed+f.billed
	if estimated(j) {
		v.marked++
	}
	switch {
	case j.Held > 0:
		// A hold is not a cost: a finished job's dead attempt is
		// written off (its hold charged), so none may remain.
		v.cost.fail(fmt.Sprintf("finished with %s still held (cost %s, bill %s): %s", j.Held, j.Cost, f.billed, v.describe(f)))
	case j.Cost == f.billed:
		v.exact++
	case j.Cost < f.billed && j.Cost >= f.billed-f.inflight:
		v.race++
	case j.Cost > f.billed && estimated(j):
		v.over++
	case j.Cost > f.billed:
		v.cost.fail(fmt.Sprintf("cost %s above the bill %s and not marked cost_estimated: %s", j.Cost, f.billed, v.describe(f)))
	default:
		v.cost.fail(fmt.Sprintf("cost %s below the bill %s by %s: %s", j.Cost, f.billed, f.billed-j.Cost, v.describe(f)))
	}
}

// checkBudget is invariant 4, on the record and on the model's bill both:
// a record within budget could still hide a bill over it.
func (v *invariants) checkBudget(f jobFacts) {
	j := f.rec
	v.budget.Checked++
	if j.Cost > j.Budget || f.billed > j.Budget {
		v.budget.fail(fmt.Sprintf("budget %s: record cost %s, model bill %s: %s", j.Budget, j.Cost, f.billed, v.describe(f)))
	}
}

// notes say how invariants 1 to 3 passed: by which rule, and how close
// the records came to the bill.
func (v *invariants) notes() {
	v.recovery.Note = fmt.Sprintf("%d unfinished within the bound %s; %d lost at create (API killed)", v.pending, v.bound, v.lost)
	v.success.Note = fmt.Sprintf("a successful generation is one a client read whole; %d jobs not succeeded had more than one", v.multi)
	v.cost.Note = fmt.Sprintf("%d exact, %d above the bill (marked cost_estimated), %d short only by stream tokens sent but never read because the client had left; finished jobs recorded %s of a bill of %s (%s), %d marked estimated",
		v.exact, v.over, v.race, v.recorded, v.billed, costRatio(v.recorded, v.billed), v.marked)
}

// checkClients takes invariants 5 and 6 from the clients: only they saw
// each answer as it came, so they checked them while polling and listing.
func (v *invariants) checkClients(c *clients) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v.order.Checked, v.isolation.Checked = c.checks5, c.checks6
	for _, s := range c.backwards {
		v.order.fail(s)
	}
	for _, s := range c.leaks {
		v.isolation.fail(s)
	}
}

// list is the invariants in order, each one's failures sorted: the jobs
// were checked in schedule order, the report reads the same either way.
func (v *invariants) list() []Invariant {
	all := []Invariant{v.recovery, v.success, v.cost, v.budget, v.order, v.isolation}
	for i := range all {
		sort.Strings(all[i].Failures)
	}
	return all
}

// timeToEnd is what a client waited: polls made, and from create to the
// first answer that showed its job finished.
func (h *harness) timeToEnd(rep *Report) {
	var toEnd []time.Duration
	for _, r := range h.clients.runs {
		r.mu.Lock()
		rep.Polls += r.polls
		if !r.ended.IsZero() {
			toEnd = append(toEnd, r.ended.Sub(r.created))
		}
		r.mu.Unlock()
	}
	rep.TimeToEnd, rep.Ended = percentiles(toEnd), len(toEnd)
}

// Report is a run's outcome.
type Report struct {
	Seed       Seed
	Jobs       int
	Tenants    int
	Load       time.Duration
	Bound      time.Duration
	LogDir     string
	Faults     map[string]int
	States     map[string]int
	Invariants []Invariant
	// AijobsBilled and BaselineBilled are the billed generations of each
	// side; Succeeded and BaselineSucceeded their finished jobs.
	AijobsBilled, BaselineBilled, Succeeded, BaselineSucceeded int
	DeadLettered                                               int
	// Routes are the same counts by the job's route, for the report's
	// split: the background route (resumable) against the others.
	Routes map[string]*RouteCount
	// Resumed counts the background generations read whole by a worker
	// incarnation other than the one that made them (byRoute); ResumedJobs
	// the succeeded jobs whose one successful generation is one of them;
	// BackgroundRead the background generations anyone read whole.
	Resumed, ResumedJobs, BackgroundRead int
	// Lanes are the figures of each lane (lanes.go), and Saved what the
	// lanes saved, on the finished records and by the bill.
	Lanes map[job.Lane]*LaneCount
	Saved SavedCount
	// Usage is the billed generations' cached and reasoning parts, and
	// the priority requests served at standard (usage.go).
	Usage UsageCount
	// DeadLetteredJobs are the jobs whose messages are in the dead letter
	// queue (SQS's redrive or a worker's hand-off), with their final state.
	DeadLetteredJobs []string
	Polls            int
	Sweeps           []string
	// TimeToEnd is, over the jobs a client saw finished, the time from
	// its first create to the first answer that showed the job finished
	// (polls every 500 ms): p50 and p99.
	TimeToEnd [2]time.Duration
	Ended     int
	// Payloads is what the run left in the payload store (payloads.go).
	Payloads PayloadCount
	// Spend is each limited tenant's spend per period (spend.go).
	Spend []TenantSpend
}

// RouteCount is one route's billed generations and succeeded jobs, on
// each side.
type RouteCount struct {
	AijobsBilled, Succeeded, BaselineBilled, BaselineSucceeded int
}

// add is the sum of two routes' counts.
func (c RouteCount) add(o RouteCount) RouteCount {
	return RouteCount{c.AijobsBilled + o.AijobsBilled, c.Succeeded + o.Succeeded, c.BaselineBilled + o.BaselineBilled,
		c.BaselineSucceeded + o.BaselineSucceeded}
}

// perJob is the report's figure for c: billed generations per succeeded
// job on each side.
func (c RouteCount) perJob() string {
	return fmt.Sprintf("aijobs %s (%d / %d), baseline %s (%d / %d)", ratio(c.AijobsBilled, c.Succeeded), c.AijobsBilled, c.Succeeded,
		ratio(c.BaselineBilled, c.BaselineSucceeded), c.BaselineBilled, c.BaselineSucceeded)
}

// renderRoutes are the lines that answer "what does resuming save": the
// background route against the rest, each route's figures, and the
// generations resumed.
func (r *Report) renderRoutes(b *strings.Builder) {
	if len(r.Routes) == 0 {
		return
	}
	var rest RouteCount
	names := make([]string, 0, len(r.Routes))
	for name, c := range r.Routes {
		names = append(names, name)
		if name != "background" {
			rest = rest.add(*c)
		}
	}
	slices.Sort(names)
	if c := r.Routes["background"]; c != nil {
		fmt.Fprintf(b, "  with resuming (background route): %s\n", c.perJob())
	}
	fmt.Fprintf(b, "  without it (the other routes):    %s\n", rest.perJob())
	for _, name := range names {
		fmt.Fprintf(b, "  route %-12s %s\n", name+":", r.Routes[name].perJob())
	}
	fmt.Fprintf(b, "generations resumed: %d (background generations read whole by a worker incarnation other than the one that created them, of %d read whole); %d jobs succeeded on one\n",
		r.Resumed, r.BackgroundRead, r.ResumedJobs)
	// Each resumed generation would otherwise have been made again: the
	// same jobs' figure without resuming, at the least.
	if c := r.Routes["background"]; c != nil {
		fmt.Fprintf(b, "  without resuming (each of them generated again), background route: aijobs at least %s (%d / %d)\n",
			ratio(c.AijobsBilled+r.Resumed, c.Succeeded), c.AijobsBilled+r.Resumed, c.Succeeded)
	}
}

// percentiles are ds's p50 and p99 (nearest rank).
func percentiles(ds []time.Duration) [2]time.Duration {
	if len(ds) == 0 {
		return [2]time.Duration{}
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return [2]time.Duration{at(0.50), at(0.99)}
}

// Failed reports whether any invariant broke.
func (r *Report) Failed() bool {
	if r.Payloads.broken() {
		return true
	}
	for _, i := range r.Invariants {
		if i.Failed > 0 {
			return true
		}
	}
	return false
}

func ratio(a, b int) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

// String renders the report: the seed and how to replay it, faults by
// kind, one line per invariant, the baseline, and each failure's diagnosis
// (at most 10 per invariant; the rest are counted, and all are in the
// log directory's failures.txt).
func (r *Report) String() string { return r.render(10) }

func (r *Report) render(maxShown int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "aijobs chaos run: seed %d, %d jobs, %d tenants, load %s\n", r.Seed, r.Jobs, r.Tenants, r.Load)
	fmt.Fprintf(&b, "replay: make chaos SEED=%d JOBS=%d DURATION=%s   (logs: %s)\n", r.Seed, r.Jobs, r.Load, r.LogDir)
	total := 0
	kinds := make([]string, 0, len(r.Faults))
	for k, n := range r.Faults {
		kinds = append(kinds, k)
		if k != AWSRetriesExhausted {
			total += n
		}
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "faults injected: %d\n", total)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-26s %6d\n", k, r.Faults[k])
	}
	states := make([]string, 0, len(r.States))
	for k := range r.States {
		states = append(states, k)
	}
	slices.Sort(states)
	b.WriteString("jobs:")
	for _, k := range states {
		fmt.Fprintf(&b, " %s %d,", k, r.States[k])
	}
	fmt.Fprintf(&b, " %d polls; %d messages in the dead letter queue\n", r.Polls, r.DeadLettered)
	b.WriteString(r.Payloads.line())
	fmt.Fprintf(&b, "time to end (create to a client seeing it finished, %d jobs): p50 %s, p99 %s\n", r.Ended,
		r.TimeToEnd[0].Round(100*time.Millisecond), r.TimeToEnd[1].Round(100*time.Millisecond))
	if len(r.DeadLetteredJobs) > 0 {
		fmt.Fprintf(&b, "in the dead letter queue: %s\n", strings.Join(r.DeadLetteredJobs, ", "))
	}
	for _, s := range r.Sweeps {
		fmt.Fprintf(&b, "reconciler %s\n", s)
	}
	for _, i := range r.Invariants {
		verdict := "PASS"
		if i.Failed > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "invariant %d %s: %s, %d failed of %d checked (%s)\n", i.N, verdict, i.Name, i.Failed, i.Checked, i.Note)
	}
	if len(r.Spend) > 0 {
		b.WriteString("spend limits (each limited tenant's balance per period: records and bill):\n")
	}
	for _, s := range r.Spend {
		b.WriteString(s.line() + "\n")
	}
	fmt.Fprintf(&b, "billed generations per succeeded job: aijobs %s (%d / %d), baseline %s (%d / %d)\n",
		ratio(r.AijobsBilled, r.Succeeded), r.AijobsBilled, r.Succeeded, ratio(r.BaselineBilled, r.BaselineSucceeded), r.BaselineBilled, r.BaselineSucceeded)
	r.renderRoutes(&b)
	r.renderLanes(&b)
	r.renderUsage(&b)
	for _, i := range r.Invariants {
		for n, f := range i.Failures {
			if maxShown > 0 && n == maxShown {
				fmt.Fprintf(&b, "  ... and %d more failures of invariant %d\n", len(i.Failures)-maxShown, i.N)
				break
			}
			fmt.Fprintf(&b, "  invariant %d: %s\n", i.N, f)
		}
	}
	return b.String()
}

// WriteAll writes the whole report, every failure included, to path.
func (r *Report) WriteAll(path string) error {
	return os.WriteFile(path, []byte(r.render(0)), 0o644)
}

// costRatio is what the records say the jobs cost over what the model billed.
func costRatio(recorded, billed job.Nanocents) string {
	if billed <= 0 {
		return "no bill"
	}
	return fmt.Sprintf("%.4f x the bill", float64(recorded)/float64(billed))
}
