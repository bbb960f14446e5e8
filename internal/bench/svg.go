package bench

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The picture's layout: two panels side by side, jobs/s on the left, p99
// create and poll latency on the right, both against clients on a log2
// axis.
const (
	svgWidth, svgHeight = 800, 340
	panelWidth          = svgWidth / 2
	marginLeft          = 64
	marginRight         = 16
	marginTop           = 44
	marginBottom        = 52
)

// series is one line of a panel.
type series struct {
	name, color string
	values      []float64
}

// ScaleSVG draws the points' medians as an SVG document, written with the
// standard library alone so `make bench-scale` regenerates
// docs/bench-scale.svg with no other tool.
func ScaleSVG(points []ScalePoint) string {
	xs := make([]float64, len(points))
	jobs := series{name: "jobs/s", color: "#1f77b4"}
	create := series{name: "create p99", color: "#d62728"}
	poll := series{name: "poll p99", color: "#2ca02c"}
	for i, p := range points {
		m := p.Median()
		xs[i] = float64(p.Concurrency)
		jobs.values = append(jobs.values, m.JobsPerSec)
		create.values = append(create.values, float64(m.CreateP99)/float64(time.Millisecond))
		poll.values = append(poll.values, float64(m.PollP99)/float64(time.Millisecond))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, svgHeight)
	panel(&b, 0, chart{"Throughput (median)", "jobs/s", []series{jobs}}, xs)
	panel(&b, panelWidth, chart{"p99 latency (median)", "ms", []series{create, poll}}, xs)
	b.WriteString("</svg>\n")
	return b.String()
}

// chart is what one panel shows: its title, the unit of its y axis, and
// its lines over the same xs.
type chart struct {
	title, unit string
	lines       []series
}

// panel draws c at horizontal offset left.
func panel(b *strings.Builder, left int, c chart, xs []float64) {
	title, unit, lines := c.title, c.unit, c.lines
	x0, x1 := float64(left+marginLeft), float64(left+panelWidth-marginRight)
	y0, y1 := float64(svgHeight-marginBottom), float64(marginTop)
	top := 0.0
	for _, s := range lines {
		for _, v := range s.values {
			top = max(top, v)
		}
	}
	top = niceCeil(top)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = min(lo, math.Log2(x)), max(hi, math.Log2(x))
	}
	px := func(x float64) float64 {
		if hi <= lo {
			return (x0 + x1) / 2
		}
		return x0 + (math.Log2(x)-lo)/(hi-lo)*(x1-x0)
	}
	py := func(v float64) float64 { return y0 - max(v, 0)/top*(y0-y1) }

	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left+marginLeft, esc(title))
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := py(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", x0, y, x1, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, esc(strconv.FormatFloat(v, 'g', 4, 64)))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", x0, y0, x1, y0)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", x0, y0, x0, y1)
	for _, x := range xs {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), y0+16, esc(strconv.FormatFloat(x, 'g', -1, 64)))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">clients (log scale)</text>`+"\n", (x0+x1)/2, svgHeight-12)
	fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="middle" transform="rotate(-90 %d %.1f)">%s</text>`+"\n",
		left+16, (y0+y1)/2, left+16, (y0+y1)/2, esc(unit))
	for i, s := range lines {
		pts := make([]string, len(s.values))
		for j, v := range s.values {
			pts[j] = fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(v))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
		for j, v := range s.values {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(xs[j]), py(v), s.color)
		}
		ly := y1 + 14*float64(i)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x0+10, ly, x0+30, ly, s.color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x0+36, ly+4, esc(s.name))
	}
}

// niceCeil is the smallest of 1, 2, 2.5 or 5 times a power of ten at or
// above v (1 for v <= 0), the top of a chart's axis.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
