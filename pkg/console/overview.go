package console

import (
	"net/http"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// window is one of the overview's two spans (the last hour, the last day).
type window struct {
	Name     string
	Since    string // the failures page's since for this span
	Chart    any
	ByState  []stateCount
	Failures []job.Total
	Failed   int
	Cost     job.Nanocents
}

type stateCount struct {
	State job.State
	Jobs  int
}

type overviewPage struct {
	page
	Hour, Day   window
	Backlog     int
	DeadLetters int
	DLQRate     float64
	DeadHour    int
	Oldest      *job.Job
	OldestAge   time.Duration
	Unfinished  int
	Total       int
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	snap, err := c.snap.get(r.Context())
	if err != nil {
		c.unavailable(w, "overview", err)
		return
	}
	now := snap.At
	p := overviewPage{page: c.page(r, "overview", "Overview"), Backlog: snap.Backlog, DeadLetters: snap.DeadLetters,
		DLQRate: snap.DLQRate, Total: len(snap.Jobs)}
	p.Hour = lastHour.of(snap, now)
	p.Day = lastDay.of(snap, now)
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if !j.State.Terminal() {
			p.Unfinished++
		}
		if j.State == job.Queued && (p.Oldest == nil || j.CreatedAt.Before(p.Oldest.CreatedAt)) {
			p.Oldest = j
		}
	}
	for _, f := range snap.Failures {
		if f.Class == job.DeadLettered && !f.EndedAt.Before(now.Add(-time.Hour)) {
			p.DeadHour++
		}
	}
	if p.Oldest != nil {
		p.OldestAge = now.Sub(p.Oldest.CreatedAt).Truncate(time.Second)
	}
	c.render(w, r, "overview.html", p)
}

// span is a window of the overview: the last n steps, named, and the
// failures page's since that shows the same time.
type span struct {
	name, since string
	step        time.Duration
	n           int
}

var (
	lastHour = span{"last hour", "1h", 5 * time.Minute, 12}
	lastDay  = span{"last day", "24h", time.Hour, 24}
)

// length is how far back the span reaches.
func (sp span) length() time.Duration { return time.Duration(sp.n) * sp.step }

// of is the overview of jobs created, and failures ended, in the span.
func (sp span) of(snap *snapshot, now time.Time) window {
	s := bucket(snap.Jobs, now, sp.step, sp.n)
	win := window{Name: sp.name, Since: sp.since, Chart: s.svg("jobs by state, "+sp.name, "created")}
	counts := map[job.State]int{}
	for _, j := range snap.Jobs {
		if !j.CreatedAt.Before(s.Start) {
			counts[j.State]++
		}
	}
	var failed []job.Failure
	for _, f := range snap.Failures {
		if !f.EndedAt.Before(s.Start) {
			failed = append(failed, f)
		}
	}
	for _, st := range chartStates {
		win.ByState = append(win.ByState, stateCount{st, counts[st]})
	}
	rep := job.SummarizeFailures(failed)
	win.Failures, win.Failed, win.Cost = rep.ByClass, rep.Jobs, rep.Cost
	return win
}
