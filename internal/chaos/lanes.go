package chaos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// LaneCount is one lane's figures in a run: what the records say (the
// succeeded jobs whose result_lane it is, and the sum of their saved_nc)
// beside what the model server saw (aijobs' requests in it, by their
// service_tier: billed, refused for want of capacity, and what the
// billed ones cost less than at their rungs' standard prices). A job's
// saved_nc adds up every call of every attempt, whatever lane answered,
// so a lane's records and its bill need not agree; SavedCount compares
// them job by job.
type LaneCount struct {
	Succeeded                 int
	Saved                     job.Nanocents
	Requests, Billed, Refused int
	BillSaved                 job.Nanocents
}

// SavedCount holds saved_nc to the bill: over the finished jobs, what the
// records say the lanes saved and what the bill says they did; and among
// the jobs whose cost is the bill exactly (every call's usage known, so
// its saving known too), those whose saved_nc is not the bill's saving.
type SavedCount struct {
	Recorded, Billed job.Nanocents
	Exact, Differ    int
	// Differing names the first of them: job id, record and bill.
	Differing []string
}

// maxDiffering bounds the jobs SavedCount names.
const maxDiffering = 10

// lane is the counts of lane l, made on first use.
func (r *Report) lane(l job.Lane) *LaneCount {
	if r.Lanes == nil {
		r.Lanes = map[job.Lane]*LaneCount{}
	}
	if r.Lanes[l] == nil {
		r.Lanes[l] = &LaneCount{}
	}
	return r.Lanes[l]
}

// countLanes counts aijobs' requests in each lane they asked for from the
// model server's ledger: only the server knows the refusals a worker
// moved past (the record keeps no row per call), and what each billed
// call saved, priced in the lane that served it (a priority request
// served at standard saved nothing).
func (r *Report) countLanes(gens []Generation, prices map[laneKey]priced) {
	for _, l := range job.Lanes() {
		r.lane(l)
	}
	for _, g := range gens {
		if g.NS != "aj" {
			continue
		}
		c := r.lane(g.Lane)
		c.Requests++
		switch {
		case g.Billed():
			c.Billed++
			c.BillSaved += prices[laneKey{g.Model, g.ServedLane()}].saved(g.Tokens())
		case g.Outcome == "capacity_unavailable":
			c.Refused++
		}
	}
}

// byLane counts a succeeded job in its result_lane, and holds a finished
// job's saved_nc to what its bill saved.
func (r *Report) byLane(f jobFacts) {
	if !f.has || !f.rec.State.Terminal() {
		return
	}
	j := f.rec
	if j.State == job.Succeeded {
		c := r.lane(j.ResultLane)
		c.Succeeded++
		c.Saved += j.Saved
	}
	r.Saved.Recorded += j.Saved
	r.Saved.Billed += f.saved
	if j.Cost != f.billed || j.Held != 0 {
		return
	}
	r.Saved.Exact++
	if j.Saved != f.saved {
		r.Saved.Differ++
		if len(r.Saved.Differing) < maxDiffering {
			r.Saved.Differing = append(r.Saved.Differing, fmt.Sprintf("%s (#%d: record %s, bill %s)", f.run.id, f.run.plan.Index, j.Saved, f.saved))
		}
	}
}

// laneOrder is the lanes of r cheapest first, then any other (a
// succeeded job with no result_lane counts under "").
func (r *Report) laneOrder() []job.Lane {
	out := job.Lanes()
	var rest []job.Lane
	for l := range r.Lanes {
		if !slices.Contains(out, l) {
			rest = append(rest, l)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// renderLanes are the lines that answer "did the lanes keep the
// promises, and what did they save": each lane's jobs and requests, and
// saved_nc on the records against the bill.
func (r *Report) renderLanes(b *strings.Builder) {
	if len(r.Lanes) == 0 {
		return
	}
	fmt.Fprintf(b, "lanes (route %s offers flex and priority): succeeded jobs by result_lane and their saved_cents; aijobs' model requests by service_tier\n", lanedRoute)
	for _, l := range r.laneOrder() {
		c := r.Lanes[l]
		if c == nil {
			continue
		}
		name := string(l)
		if name == "" {
			name = "unnamed"
		}
		fmt.Fprintf(b, "  lane %-10s %d succeeded in it (saved_cents %s); %d requests: %d billed (saving %s on the bill), %d refused for capacity\n",
			name+":", c.Succeeded, c.Saved, c.Requests, c.Billed, c.BillSaved, c.Refused)
	}
	s := r.Saved
	fmt.Fprintf(b, "  saved_cents of the finished jobs: records %s, bill %s; %d of the %d jobs at the bill's exact cost record another saving than the bill's\n",
		s.Recorded, s.Billed, s.Differ, s.Exact)
	if len(s.Differing) > 0 {
		fmt.Fprintf(b, "  saved_cents not the bill's: %s\n", strings.Join(s.Differing, ", "))
	}
}
