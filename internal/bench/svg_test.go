package bench

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgShape is what a parse of the picture found.
type svgShape struct {
	width, height float64
	polylines     [][][2]float64
	texts         []string
}

// parseSVG decodes doc as XML to its end (an error for anything not well
// formed) and checks its root is an SVG element with a size and viewBox.
func parseSVG(t *testing.T, doc string) svgShape {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	var s svgShape
	depth, inText := 0, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			if depth == 0 {
				if e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root is %v, want svg in the SVG namespace", e.Name)
				}
				s.width, s.height = num(t, attr["width"]), num(t, attr["height"])
				if vb := attr["viewBox"]; vb != "0 0 "+attr["width"]+" "+attr["height"] {
					t.Fatalf("viewBox %q does not match the size", vb)
				}
			}
			if e.Name.Local == "polyline" {
				var pts [][2]float64
				for _, p := range strings.Fields(attr["points"]) {
					x, y, ok := strings.Cut(p, ",")
					if !ok {
						t.Fatalf("point %q is not x,y", p)
					}
					pts = append(pts, [2]float64{num(t, x), num(t, y)})
				}
				s.polylines = append(s.polylines, pts)
			}
			inText = e.Name.Local == "text"
			depth++
		case xml.EndElement:
			depth--
			inText = false
		case xml.CharData:
			if inText {
				s.texts = append(s.texts, string(e))
			}
		}
	}
	if depth != 0 || s.width == 0 {
		t.Fatalf("no complete svg element (depth %d)", depth)
	}
	return s
}

func num(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		t.Fatalf("%q is not a finite number", v)
	}
	return f
}

func point(c int, jobsPerSec float64, createP99, pollP99 time.Duration) ScalePoint {
	return ScalePoint{Concurrency: c, Jobs: 100, Runs: []ScaleSample{{JobsPerSec: jobsPerSec, CreateP99: createP99, PollP99: pollP99}}}
}

// Three points draw three lines of three points each (jobs/s, create p99,
// poll p99), inside the picture, the fastest point highest, with every
// concurrency labelled.
func TestScaleSVGDrawsEachSeriesInsideThePicture(t *testing.T) {
	points := []ScalePoint{
		point(1, 9.5, 3*time.Millisecond, 2*time.Millisecond),
		point(16, 150, 20*time.Millisecond, 15*time.Millisecond),
		point(256, 420, 300*time.Millisecond, 250*time.Millisecond),
	}
	s := parseSVG(t, ScaleSVG(points))
	if len(s.polylines) != 3 {
		t.Fatalf("%d polylines, want 3 (jobs/s, create p99, poll p99)", len(s.polylines))
	}
	for i, line := range s.polylines {
		if len(line) != len(points) {
			t.Fatalf("polyline %d has %d points, want %d", i, len(line), len(points))
		}
		for _, p := range line {
			if p[0] < 0 || p[0] > s.width || p[1] < 0 || p[1] > s.height {
				t.Errorf("polyline %d: point %v outside %vx%v", i, p, s.width, s.height)
			}
		}
		// x grows with clients; y (downwards in SVG) falls as the value grows.
		if !(line[0][0] < line[1][0] && line[1][0] < line[2][0]) {
			t.Errorf("polyline %d: x not increasing with clients: %v", i, line)
		}
		if !(line[0][1] > line[1][1] && line[1][1] > line[2][1]) {
			t.Errorf("polyline %d: larger values not drawn higher: %v", i, line)
		}
	}
	// log2 axis: 1 -> 16 is four doublings, 16 -> 256 four more.
	jobs := s.polylines[0]
	if d1, d2 := jobs[1][0]-jobs[0][0], jobs[2][0]-jobs[1][0]; math.Abs(d1-d2) > 0.2 {
		t.Errorf("clients axis not logarithmic: steps %.1f and %.1f", d1, d2)
	}
	all := strings.Join(s.texts, "|")
	for _, want := range []string{"|1|", "|16|", "|256|", "jobs/s", "create p99", "poll p99", "clients"} {
		if !strings.Contains("|"+all+"|", want) {
			t.Errorf("no text %q in %q", want, all)
		}
	}
}

// One point, or nothing measured, still draws a valid picture (no NaN from
// a zero range).
func TestScaleSVGOfOneOrZeroPointsIsValid(t *testing.T) {
	for name, points := range map[string][]ScalePoint{"one": {point(8, 0, 0, 0)}, "none": nil} {
		t.Run(name, func(t *testing.T) {
			doc := ScaleSVG(points)
			if strings.Contains(doc, "NaN") || strings.Contains(doc, "Inf") {
				t.Fatalf("NaN or Inf in the picture:\n%s", doc)
			}
			parseSVG(t, doc)
		})
	}
}

// The committed picture docs/benchmarks.md shows is the generator's.
func TestCommittedScalePictureIsValidSVG(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bench-scale.svg")
	if err != nil {
		t.Fatal(err)
	}
	if s := parseSVG(t, string(doc)); len(s.polylines) != 3 {
		t.Fatalf("%d polylines in docs/bench-scale.svg, want 3", len(s.polylines))
	}
}
