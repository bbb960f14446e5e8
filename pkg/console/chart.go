package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// chartStates are the states a chart stacks, bottom up, with their colours
// (the page's legend uses the same classes).
var chartStates = []job.State{job.Succeeded, job.Running, job.Queued, job.Failed, job.Abandoned}

// series is jobs counted by state in equal time buckets.
type series struct {
	Start  time.Time
	Step   time.Duration
	Counts []map[job.State]int
}

// bucket counts jobs created in [end - n*step, end) by their state now.
func bucket(jobs []job.Job, end time.Time, step time.Duration, n int) series {
	s := series{Start: end.Add(-time.Duration(n) * step), Step: step, Counts: make([]map[job.State]int, n)}
	for i := range s.Counts {
		s.Counts[i] = map[job.State]int{}
	}
	for _, j := range jobs {
		if j.CreatedAt.Before(s.Start) || !j.CreatedAt.Before(end) {
			continue
		}
		s.Counts[int(j.CreatedAt.Sub(s.Start)/step)][j.State]++
	}
	return s
}

// svg draws s as stacked bars, server-side: no script, no library. Every
// string in it is the package's own or a number, so it is safe HTML.
func (s series) svg(title, label string) template.HTML {
	const w, h, left, bottom, top = 600, 160, 36, 20, 8
	most := 1
	for _, c := range s.Counts {
		n := 0
		for _, st := range chartStates {
			n += c[st]
		}
		most = max(most, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%d</text>`, left-4, top+8, most)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">0</text>`, left-4, h-bottom)
	slot := float64(w-left) / float64(len(s.Counts))
	plot := float64(h - bottom - top)
	for i, c := range s.Counts {
		x := float64(left) + float64(i)*slot + 1
		y := float64(h - bottom)
		at := s.Start.Add(time.Duration(i) * s.Step).UTC().Format("15:04")
		for _, st := range chartStates {
			if c[st] == 0 {
				continue
			}
			bh := plot * float64(c[st]) / float64(most)
			y -= bh
			fmt.Fprintf(&b, `<rect class="st-%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s from %s: %d %s</title></rect>`,
				st, x, y, slot-2, bh, label, at, c[st], st)
		}
		if i%(max(1, len(s.Counts)/6)) == 0 {
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d">%s</text>`, x, h-4, at)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built above from numbers and constants only
}
