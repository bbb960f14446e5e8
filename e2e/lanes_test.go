package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

var (
	lanesJobs = flag.Int("lanes.jobs", 200, "jobs of the cost lanes run (docs/benchmarks.md quotes 1,000)")
	lanesRate = flag.Int("lanes.rate", 25, "jobs submitted a second in the cost lanes run")
	// Inside make test every package's tests share the 2 cores: the
	// deadlines, p99s and timeouts are 4 times as long there, so a job
	// queued behind the load still has time for its lane. The figures of
	// docs/benchmarks.md are measured at -lanes.scale 1.
	lanesScale = flag.Int("lanes.scale", 4, "multiply the lanes run's deadlines, p99s and timeouts")
)

// laneP99 is each lane's p99 in the lanes route at scale 1, in order of
// price, cheapest first (and so slowest first): batch at half the
// standard price, flex at 60%, standard, priority at 1.75 times.
var laneP99 = []struct {
	lane job.Lane
	ms   int
}{{job.Batch, 20000}, {job.Flex, 6000}, {job.Standard, 2500}, {job.Priority, 1000}}

// lanesRoutes is the lanes route at scale k: one fake rung (standard
// 100/400 cents per million tokens, p99 2.5 s) offering batch at half the
// price (p99 20 s; the collector runs every 250 ms, a batch waits 500 ms
// for more jobs and the fake ends it in 800 ms), flex at 60% (p99 6 s;
// the fake answers flex three times slower) and priority at 1.75 times
// (p99 1 s; the fake answers twice as fast), every time but the fake's
// multiplied by k.
func lanesRoutes(k int) string {
	d := func(ms int) string { return fmt.Sprintf("%dms", ms*k) }
	p99 := func(l job.Lane) string { return fmt.Sprintf("%dms", p99Of(l, k).Milliseconds()) }
	return `{"providers": {"f": {"kind": "fake", "latency": "200ms"}},
  "routes": {"default": {"rungs": [{"provider": "f", "price": {"input": "100", "output": "400"}, "timeout": "` + d(3000) + `", "p99": "` + p99(job.Standard) + `",
    "lanes": {"batch": {"price": {"input": "50", "output": "200"}, "p99": "` + p99(job.Batch) + `", "window": "500ms"},
              "flex": {"price": {"input": "60", "output": "240"}, "timeout": "` + d(8000) + `", "p99": "` + p99(job.Flex) + `"},
              "priority": {"price": {"input": "175", "output": "700"}, "timeout": "` + d(2000) + `", "p99": "` + p99(job.Priority) + `"}}}]}}}`
}

// laneCase is one kind of job of the run: its deadline, the lanes it
// allows, whether flex refuses it, and the lanes its calls must take.
type laneCase struct {
	name     string
	deadline int // seconds
	lanes    string
	refused  bool
	want     []job.Lane
}

var laneCases = []laneCase{
	{name: "due in 2 s", deadline: 2, want: []job.Lane{job.Priority}},
	{name: "due in 5 s", deadline: 5, want: []job.Lane{job.Standard}},
	{name: "due in 15 s", deadline: 15, want: []job.Lane{job.Flex}},
	{name: "due in 15 s, flex out of capacity", deadline: 15, refused: true, want: []job.Lane{job.Flex, job.Standard}},
	{name: "due in an hour", deadline: 3600, want: []job.Lane{job.Batch}},
	{name: "due in an hour, standard asked for", deadline: 3600, lanes: `["standard"]`, want: []job.Lane{job.Standard}},
	{name: "due in an hour, batch and flex forbidden", deadline: 3600, lanes: `["standard","priority"]`, want: []job.Lane{job.Standard}},
}

// caseOf is the case of the run's i-th job, by twenties: half due in an
// hour (batch), a fifth in 15 s (flex), a tenth in 5 s, a tenth in 2 s,
// and each other case one in twenty.
func caseOf(i int) laneCase {
	switch i % 20 {
	case 0, 10:
		return laneCases[0]
	case 1, 11:
		return laneCases[1]
	case 2, 7, 12:
		return laneCases[2]
	case 3:
		return laneCases[3]
	case 4:
		return laneCases[5]
	case 5:
		return laneCases[6]
	}
	return laneCases[4]
}

// TestEachJobRunsInTheCheapestLaneItsDeadlineAllows sends jobs with mixed
// deadlines over a route offering batch, flex, standard and priority, at
// a steady rate: each job ends once, in one attempt, in the cheapest
// lane whose p99 fits the time it had left when its worker planned its
// calls (checkLane: on an idle machine, its case's lane, succeeded
// before its deadline; a job claimed late on a loaded one rightly runs
// faster, or ends deadline_exceeded when no lane had time), a flex
// refusal moving it to standard within its one attempt, a batch job
// collected, submitted and settled by the collector; its cost exact at that lane's
// price and what it saved against standard on the record. It logs each
// lane's share, p50 and p99 completion, and the money saved
// (docs/benchmarks.md, "Cost lanes").
//
// Not parallel: its deadlines are seconds, and the package's parallel load
// tests (the 2,000-job replay) would keep its jobs queued past them, and
// the run would check the late path more than the cheapest lane.
func TestEachJobRunsInTheCheapestLaneItsDeadlineAllows(t *testing.T) {
	// The route's lanes, one after another, take 13 s (at scale 1): the
	// worker's timeout must hold them (settings.Validate). A lease of 5 s
	// renewed every 500 ms, as the other load tests', so a heartbeat late
	// under load does not cut a call.
	k := max(*lanesScale, 1)
	for _, c := range laneCases {
		if got := plannedCalls(c, k, time.Duration(c.deadline*k)*time.Second); !slices.Equal(got, c.want) {
			t.Fatalf("%s: the test's lane rule plans %v with the whole deadline left, the case wants %v", c.name, got, c.want)
		}
	}
	s := startStackWith(t, map[string]string{"AIJOBS_ROUTES": lanesRoutes(k), "AIJOBS_FAKE_LATENCY": "200ms",
		"AIJOBS_WORKER_TIMEOUT": fmt.Sprint(20*k, "s"), "AIJOBS_VISIBILITY_TIMEOUT": fmt.Sprint(20*k+1, "s"), "AIJOBS_COLLECT_EVERY": "250ms",
		"AIJOBS_LEASE_TTL": steadyLease["AIJOBS_LEASE_TTL"], "AIJOBS_HEARTBEAT": "500ms"}, true)
	route := s.app.Config.Routes["default"]
	n, rate := *lanesJobs, *lanesRate
	if awstest.Emulator() == "moto" {
		// moto answers a write in seconds under the load of 25 jobs a
		// second (see scripts/test-moto.sh): the same run, a fifth as
		// fast and a quarter as long, keeps its jobs' deadlines.
		n, rate = max(n/4, 20), max(rate/5, 1)
	}
	ids := make([]string, n)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	var late atomic.Int64
	for i := range n {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := caseOf(i)
			content := fmt.Sprintf("lanes job %d", i)
			if c.refused {
				content = "[[fake:flex_refuse]] " + content
			}
			extra := fmt.Sprintf(`"deadline_seconds": %d`, c.deadline*k)
			if c.lanes != "" {
				extra += `, "lanes": ` + c.lanes
			}
			start := time.Now()
			ids[i] = s.submit("t", fmt.Sprint("lane-", i), jobBody(content, extra))
			if time.Since(start) > 500*time.Millisecond {
				late.Add(1)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		// A create that failed even retried recorded no id: waiting for
		// the run would wait on nothing (the stall seen was 3 minutes on
		// the empty ids of four failed creates).
		t.FailNow()
	}
	byLane := map[job.Lane][]time.Duration{}
	var cost, saved job.Nanocents
	moved := 0
	for _, j := range awaitAll(t, s, ids, 3*time.Minute) {
		i := slices.Index(ids, j.ID)
		c := caseOf(i)
		ok, asIdle := checkLane(t, s, c, k, j)
		if !asIdle {
			moved++
		}
		if !ok || j.State != job.Succeeded {
			continue
		}
		var res struct{ Usage model.Usage }
		if err := json.Unmarshal(j.Result, &res); err != nil {
			t.Fatal(err)
		}
		lane, _ := route.Rungs[0].InLane(j.ResultLane)
		want := res.Usage.Cost(lane.Price)
		// The saving against the rung's own (standard) price, worked out
		// here, not by the code that records it; its sign by the lane.
		wantSaved := res.Usage.Cost(route.Rungs[0].Price) - want
		switch {
		case j.Attempts > 1 && (j.Cost < want || j.Held != 0):
			// An earlier attempt ended unanswered (checkRetried): its
			// calls are on the record too, perhaps as an estimate, so the
			// answer's own cost is a floor, not the total.
			t.Errorf("job %s (%s): cost %s held %s after %d attempts, want at least %s, its answer's cost", j.ID, c.name, j.Cost, j.Held, j.Attempts, want)
		case j.Attempts == 1 && (j.Cost != want || j.CostEstimated || j.Saved != wantSaved || !savedSign(j.ResultLane, j.Saved) || j.Held != 0):
			t.Errorf("job %s (%s): cost %s saved %s held %s, want %s at %s's price, saved %s", j.ID, c.name, j.Cost, j.Saved, j.Held,
				want, j.ResultLane, wantSaved)
		}
		byLane[j.ResultLane] = append(byLane[j.ResultLane], took(j))
		cost += j.Cost
		saved += j.Saved
	}
	if moved > 0 {
		t.Logf("%d of %d jobs were planned with less time left than an idle machine leaves them: a faster lane, or their deadline missed", moved, n)
	}
	if len(byLane[job.Batch]) == 0 {
		// Half the jobs are due in an hour or more: no machine is slow
		// enough to make all of them miss, only a broken worker.
		t.Errorf("no job succeeded in the batch lane")
	}
	if late.Load() > 0 {
		t.Logf("%d creates took over 500 ms: the machine is loaded", late.Load())
	}
	logLanes(t, n, byLane, cost, saved)
}

// checkLane holds job j of case c to the lane rule at the time it had
// left when its worker planned its calls, which is between its creation
// and its first call (its end, in the batch lane, which makes none): on
// an idle machine milliseconds apart, and the lanes are c.want. A job
// queued behind a loaded machine's work rightly takes a faster lane, and
// one whose call a loaded machine stretches past its deadline, or that
// is claimed after it, rightly ends deadline_exceeded, but never before
// its deadline: the rule and that promise hold either way, and the
// machine's speed stays out of the assertion. ok says j passed, asIdle
// that it succeeded in c.want's lanes.
func checkLane(t *testing.T, s *stack, c laneCase, k int, j job.Job) (ok, asIdle bool) {
	t.Helper()
	planned := j.UpdatedAt
	if at, called := s.called.of(j.ID); called {
		planned = at
	}
	lo, hi := j.Deadline.Sub(planned), j.Deadline.Sub(j.CreatedAt)
	got := s.fake.Lanes(j.ID)
	if j.State == job.Succeeded && j.Attempts > 1 {
		return checkRetried(t, c, k, j, got, hi), false
	}
	plans := plansBetween(c, k, lo, hi)
	if len(got) > 0 && !slices.ContainsFunc(plans, func(p []job.Lane) bool { return slices.Equal(p, got) }) {
		t.Errorf("job %s (%s): %s, lanes called %v, want one of %v (planned with %s to %s left)",
			j.ID, c.name, j.State, got, plans, lo.Round(time.Millisecond), hi)
		return false, false
	}
	if j.State != job.Succeeded {
		if j.ErrorClass != job.DeadlineExceeded || j.Attempts > 1 || j.UpdatedAt.Before(j.Deadline) || j.Held != 0 {
			t.Errorf("job %s (%s): %s after %d attempts, %s of %ds, first call with %s left, holding %s (%s %s)", j.ID, c.name,
				j.State, j.Attempts, took(j), c.deadline*k, lo.Round(time.Millisecond), j.Held, j.ErrorClass, j.ErrorDetail)
			return false, false
		}
		return true, false
	}
	if j.Attempts != 1 || len(got) == 0 || j.ResultLane != got[len(got)-1] ||
		!slices.Equal(j.AttemptLanes, []job.AttemptLane{{Attempt: 1, Lane: got[len(got)-1]}}) {
		t.Errorf("job %s (%s): succeeded after %d attempts, lanes called %v, result lane %s, attempt lanes %v",
			j.ID, c.name, j.Attempts, got, j.ResultLane, j.AttemptLanes)
		return false, false
	}
	return true, slices.Equal(got, c.want)
}

// checkRetried holds a job that succeeded after more than one attempt to
// the lane rule attempt by attempt. On a loaded machine a store write an
// attempt needs between its lanes (the hold raised for the next lane, a
// heartbeat renewing the lease) can fail or come too late: the attempt
// then ends after a lane that refused it, unanswered and unbilled, and
// the job is retried (pkg/worker/finish.go, attempt.retryOrEnd; a run seen: lanes
// called [flex flex standard] for a flex-refused job, a heartbeat failing
// in its first attempt). So each attempt's calls, split by the lane the
// record says it ended on (AttemptLanes, one entry per attempt that made
// a call), must be the start of a plan for some time left between the
// job's creation and its end, the last attempt's a whole plan ending in
// the result's lane. The cost check stays exact: a refused call costs
// nothing, so the record's cost is still the answer's alone.
func checkRetried(t *testing.T, c laneCase, k int, j job.Job, got []job.Lane, hi time.Duration) bool {
	t.Helper()
	plans := plansBetween(c, k, j.Deadline.Sub(j.UpdatedAt), hi)
	n := len(j.AttemptLanes)
	if n == 0 || j.AttemptLanes[n-1].Attempt != j.Attempts || len(got) == 0 || j.ResultLane != got[len(got)-1] ||
		j.AttemptLanes[n-1].Lane != j.ResultLane || !splitsByAttempt(got, j.AttemptLanes, plans) {
		t.Errorf("job %s (%s): succeeded after %d attempts, lanes called %v, result lane %s, attempt lanes %v, want each attempt's calls the start of one of %v",
			j.ID, c.name, j.Attempts, got, j.ResultLane, j.AttemptLanes, plans)
		return false
	}
	t.Logf("job %s (%s): succeeded after %d attempts, lanes called %v, attempt lanes %v: an earlier attempt ended unanswered",
		j.ID, c.name, j.Attempts, got, j.AttemptLanes)
	return true
}

// splitsByAttempt reports whether calls split into one run of calls per
// entry of attempts, each ending in its entry's lane and the start of one
// of plans, the last a whole plan.
func splitsByAttempt(calls []job.Lane, attempts []job.AttemptLane, plans [][]job.Lane) bool {
	if len(attempts) == 0 {
		return len(calls) == 0
	}
	last := len(attempts) == 1
	for n := 1; n <= len(calls); n++ {
		head := calls[:n]
		if head[n-1] != attempts[0].Lane || (last && n != len(calls)) {
			continue
		}
		fits := slices.ContainsFunc(plans, func(p []job.Lane) bool {
			return (!last || len(p) == n) && len(p) >= n && slices.Equal(p[:n], head)
		})
		if fits && splitsByAttempt(calls[n:], attempts[1:], plans) {
			return true
		}
	}
	return false
}

// plannedCalls is the lanes a job of case c calls, in order, when its
// worker plans them with left until its deadline: of the lanes it allows,
// those whose p99 fits in left, cheapest first, or, when none fits, the
// fastest alone; the first of them answers unless it is flex and flex
// refuses the job. Worked out here from the route's table, not by
// job.Rung.Plan.
func plannedCalls(c laneCase, k int, left time.Duration) []job.Lane {
	var allowed []job.Lane
	if c.lanes != "" {
		if err := json.Unmarshal([]byte(c.lanes), &allowed); err != nil {
			panic(err)
		}
	}
	var fit []job.Lane
	var fastest job.Lane
	for _, p := range laneP99 {
		if len(allowed) > 0 && !slices.Contains(allowed, p.lane) {
			continue
		}
		fastest = p.lane // laneP99 goes from slowest to fastest
		if p99Of(p.lane, k) <= left {
			fit = append(fit, p.lane)
		}
	}
	if len(fit) == 0 {
		return []job.Lane{fastest}
	}
	for i, l := range fit {
		if l != job.Flex || !c.refused {
			return fit[:i+1]
		}
	}
	return fit
}

// plansBetween is every call sequence plannedCalls gives a job of case c
// planned with between lo and hi left: the plan changes only where a
// lane's p99 is crossed.
func plansBetween(c laneCase, k int, lo, hi time.Duration) [][]job.Lane {
	plans := [][]job.Lane{plannedCalls(c, k, hi), plannedCalls(c, k, lo)}
	for _, p := range laneP99 {
		if at := p99Of(p.lane, k); at > lo && at < hi {
			plans = append(plans, plannedCalls(c, k, at))
		}
	}
	return plans
}

func p99Of(l job.Lane, k int) time.Duration {
	for _, p := range laneP99 {
		if p.lane == l {
			return time.Duration(p.ms*k) * time.Millisecond
		}
	}
	panic(l)
}

// took is a job's completion time, create to finish.
func took(j job.Job) time.Duration { return j.UpdatedAt.Sub(j.CreatedAt) }

// savedSign reports whether saved has the sign lane's price gives it:
// more than nothing in the cheaper lanes, less in priority, none in
// standard.
func savedSign(lane job.Lane, saved job.Nanocents) bool {
	switch lane {
	case job.Batch, job.Flex:
		return saved > 0
	case job.Priority:
		return saved < 0
	}
	return saved == 0
}

// logLanes logs the run's figures: each lane's share and p50/p99
// completion (create to finish), and the money saved against standard.
func logLanes(t *testing.T, n int, byLane map[job.Lane][]time.Duration, cost, saved job.Nanocents) {
	for _, l := range job.Lanes() {
		d := byLane[l]
		if len(d) == 0 {
			continue
		}
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		t.Logf("lane %-8s %4d jobs (%5.1f%%)  p50 %6s  p99 %6s", l, len(d), 100*float64(len(d))/float64(n),
			d[len(d)/2].Round(time.Millisecond), d[min(len(d)-1, len(d)*99/100)].Round(time.Millisecond))
	}
	t.Logf("cost %s cents, saved %s cents against standard (%.1f%% of what standard would have cost)",
		cost, saved, 100*float64(saved)/float64(cost+saved))
}
