package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// A model of the CloudWatch metric math the alarms use, so a test can
// evaluate a synthesized alarm's expression over simulated metric data.
// Each function follows the CloudWatch User Guide, "Metric math syntax and
// functions" (using-metric-math.html):
//
//   - arithmetic (+ - * /): "Missing values in a time series are treated
//     as 0"; between two series a timestamp exists if either has it;
//     dividing by zero drops the point;
//   - comparisons (< > <= >= == !=) give 0 or 1 per point; "when only one
//     of the time series has a value for a particular time stamp, the
//     function treats the missing value in the other time series as 0";
//   - FILL(m, S) "fills the missing values of a time series" with S;
//   - DIFF(m) is "the difference between each value in the time series and
//     the preceding value from that time series" (no value before the
//     first one);
//   - IF(condition, a, b) per point: a where the condition is non-zero, b
//     where it is zero; a missing condition point drops the point; a
//     missing point of series a under a true condition gives 0, a missing
//     point of b (or no b) under a false one drops the point;
//   - MAX([m1, m2]) of an array of series is a series (the per-point
//     maximum of the series that have the point).
//
// A series is one value per period of the alarm's evaluation range, oldest
// first; nil is a missing point.
type series []*float64

// mathValue is a scalar, a series or an array of series.
type mathValue struct {
	scalar *float64
	ts     series
	array  []series
}

func pt(f float64) *float64 { return &f }

// evalMath evaluates expr with the metrics (by id) over n periods.
func evalMath(expr string, metrics map[string]series, n int) (series, error) {
	p := &mathParser{src: expr, metrics: metrics, n: n}
	p.next()
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok != "" {
		return nil, fmt.Errorf("unexpected %q", p.tok)
	}
	if v.ts == nil {
		return nil, fmt.Errorf("%q is not a time series", expr)
	}
	return v.ts, nil
}

type mathParser struct {
	src     string
	pos     int
	tok     string
	metrics map[string]series
	n       int
}

// next reads one token: a number, a name, a two-character operator or one
// character.
func (p *mathParser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	start := p.pos
	c := rune(p.src[p.pos])
	switch {
	case unicode.IsDigit(c) || c == '.':
		for p.pos < len(p.src) && (unicode.IsDigit(rune(p.src[p.pos])) || p.src[p.pos] == '.') {
			p.pos++
		}
	case unicode.IsLetter(c) || c == '_':
		for p.pos < len(p.src) && (unicode.IsLetter(rune(p.src[p.pos])) || unicode.IsDigit(rune(p.src[p.pos])) || p.src[p.pos] == '_') {
			p.pos++
		}
	default:
		p.pos++
		if p.pos < len(p.src) && strings.Contains("<= >= == != && ||", p.src[start:p.pos+1]) {
			p.pos++
		}
	}
	p.tok = p.src[start:p.pos]
}

func (p *mathParser) expect(tok string) error {
	if p.tok != tok {
		return fmt.Errorf("want %q at %d, got %q", tok, p.pos, p.tok)
	}
	p.next()
	return nil
}

func (p *mathParser) expr() (mathValue, error) { return p.binary(0) }

// levels of binary operators, loosest first.
var mathLevels = [][]string{{"OR", "||"}, {"AND", "&&"}, {"<", ">", "<=", ">=", "==", "!="}, {"+", "-"}, {"*", "/"}}

func (p *mathParser) binary(level int) (mathValue, error) {
	if level == len(mathLevels) {
		return p.unary()
	}
	left, err := p.binary(level + 1)
	if err != nil {
		return left, err
	}
	for contains(mathLevels[level], p.tok) {
		op := p.tok
		p.next()
		right, err := p.binary(level + 1)
		if err != nil {
			return left, err
		}
		if left, err = apply(op, left, right, p.n); err != nil {
			return left, err
		}
	}
	return left, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *mathParser) unary() (mathValue, error) {
	if p.tok == "-" {
		p.next()
		v, err := p.unary()
		if err != nil {
			return v, err
		}
		return apply("-", mathValue{scalar: pt(0)}, v, p.n)
	}
	return p.primary()
}

func (p *mathParser) primary() (mathValue, error) {
	tok := p.tok
	switch {
	case tok == "(":
		p.next()
		v, err := p.expr()
		if err != nil {
			return v, err
		}
		return v, p.expect(")")
	case tok == "[":
		p.next()
		var arr []series
		for {
			v, err := p.expr()
			if err != nil {
				return v, err
			}
			if v.ts == nil {
				return v, fmt.Errorf("an array holds time series")
			}
			arr = append(arr, v.ts)
			if p.tok != "," {
				break
			}
			p.next()
		}
		return mathValue{array: arr}, p.expect("]")
	case tok != "" && (unicode.IsDigit(rune(tok[0])) || tok[0] == '.'):
		f, err := strconv.ParseFloat(tok, 64)
		p.next()
		return mathValue{scalar: &f}, err
	case tok != "" && unicode.IsLetter(rune(tok[0])):
		p.next()
		if p.tok != "(" {
			m, ok := p.metrics[tok]
			if !ok {
				return mathValue{}, fmt.Errorf("no metric %q", tok)
			}
			return mathValue{ts: m}, nil
		}
		p.next()
		var args []mathValue
		var names []string // bare words as arguments (FILL's REPEAT)
		for p.tok != ")" {
			if p.tok == "REPEAT" || p.tok == "LINEAR" {
				names = append(names, p.tok)
				p.next()
			} else {
				v, err := p.expr()
				if err != nil {
					return v, err
				}
				args = append(args, v)
			}
			if p.tok == "," {
				p.next()
			}
		}
		p.next()
		return call(tok, args, names, p.n)
	}
	return mathValue{}, fmt.Errorf("unexpected %q at %d", tok, p.pos)
}

func call(fn string, args []mathValue, names []string, n int) (mathValue, error) {
	switch fn {
	case "FILL":
		if len(names) > 0 || len(args) != 2 || args[0].ts == nil || args[1].scalar == nil {
			return mathValue{}, fmt.Errorf("only FILL(series, number) is modelled")
		}
		out := make(series, n)
		for i, v := range args[0].ts {
			out[i] = v
			if v == nil {
				out[i] = args[1].scalar
			}
		}
		return mathValue{ts: out}, nil
	case "DIFF":
		if len(args) != 1 || args[0].ts == nil {
			return mathValue{}, fmt.Errorf("DIFF takes one series")
		}
		out := make(series, n)
		var prev *float64
		for i, v := range args[0].ts {
			if v == nil {
				continue
			}
			if prev != nil {
				out[i] = pt(*v - *prev)
			}
			prev = v
		}
		return mathValue{ts: out}, nil
	case "IF":
		if len(args) < 2 || len(args) > 3 || args[0].ts == nil {
			return mathValue{}, fmt.Errorf("only IF(series, a[, b]) is modelled")
		}
		at := func(v mathValue, i int) (*float64, bool) {
			if v.scalar != nil {
				return v.scalar, true
			}
			return v.ts[i], false
		}
		out := make(series, n)
		for i, c := range args[0].ts {
			switch {
			case c == nil:
			case *c != 0:
				v, scalar := at(args[1], i)
				if v == nil && !scalar {
					v = pt(0)
				}
				out[i] = v
			case len(args) == 3:
				out[i], _ = at(args[2], i)
			}
		}
		return mathValue{ts: out}, nil
	case "MAX", "MIN":
		if len(args) != 1 || args[0].array == nil {
			// MAX of one series is a scalar over whatever range the alarm
			// happens to fetch: the User Guide advises against it in alarms
			return mathValue{}, fmt.Errorf("only %s of an array of series is modelled", fn)
		}
		out := make(series, n)
		for _, ts := range args[0].array {
			for i, v := range ts {
				if v != nil && (out[i] == nil || fn == "MAX" && *v > *out[i] || fn == "MIN" && *v < *out[i]) {
					out[i] = v
				}
			}
		}
		return mathValue{ts: out}, nil
	}
	return mathValue{}, fmt.Errorf("function %s is not modelled", fn)
}

// apply is a binary operator on scalars and series.
func apply(op string, a, b mathValue, n int) (mathValue, error) {
	f := func(x, y float64) (float64, bool) {
		b2f := func(c bool) float64 {
			if c {
				return 1
			}
			return 0
		}
		switch op {
		case "+":
			return x + y, true
		case "-":
			return x - y, true
		case "*":
			return x * y, true
		case "/":
			return x / y, y != 0
		case "<":
			return b2f(x < y), true
		case ">":
			return b2f(x > y), true
		case "<=":
			return b2f(x <= y), true
		case ">=":
			return b2f(x >= y), true
		case "==":
			return b2f(x == y), true
		case "!=":
			return b2f(x != y), true
		case "AND", "&&":
			return b2f(x != 0 && y != 0), true
		case "OR", "||":
			return b2f(x != 0 || y != 0), true
		}
		return math.NaN(), false
	}
	if a.array != nil || b.array != nil {
		return mathValue{}, fmt.Errorf("%s on an array of series is not modelled", op)
	}
	if a.scalar != nil && b.scalar != nil {
		v, ok := f(*a.scalar, *b.scalar)
		if !ok {
			return mathValue{}, fmt.Errorf("division by zero")
		}
		return mathValue{scalar: &v}, nil
	}
	out := make(series, n)
	for i := range out {
		x, y := a.scalar, b.scalar
		if a.ts != nil {
			x = a.ts[i]
		}
		if b.ts != nil {
			y = b.ts[i]
		}
		switch {
		case x == nil && y == nil:
			continue
		case x == nil && a.ts != nil && b.ts != nil:
			x = pt(0)
		case y == nil && a.ts != nil && b.ts != nil:
			y = pt(0)
		case x == nil || y == nil: // a series point missing against a scalar
			continue
		}
		if v, ok := f(*x, *y); ok {
			out[i] = &v
		}
	}
	return mathValue{ts: out}, nil
}

// values writes a series as "1 - 3" for test messages.
func (s series) String() string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = "-"
		if v != nil {
			parts[i] = strconv.FormatFloat(*v, 'f', -1, 64)
		}
	}
	return strings.Join(parts, " ")
}

// ser builds a series from "30 - 0": numbers and "-" for missing points.
func ser(s string) series {
	var out series
	for _, f := range strings.Fields(s) {
		if f == "-" {
			out = append(out, nil)
			continue
		}
		v, _ := strconv.ParseFloat(f, 64)
		out = append(out, pt(v))
	}
	return out
}

// The model against the User Guide's own examples (the IF and comparison
// tables of using-metric-math.html) and the semantics listed above.
func TestMetricMathModel(t *testing.T) {
	metrics := map[string]series{
		// the comparison example: metric1 [30, 20, 0, 0], metric2 [20, -, 20, -]
		"metric1": ser("30 20 0 0"), "metric2": ser("20 - 20 -"),
		// the IF examples
		"c": ser("1 1 0 0 -"), "a": ser("30 - 0 0 30"), "b": ser("0 0 20 - 20"),
		"v": ser("- - 1 1 3 - 2 -"), "w": ser("1 - - 2 - 4 - -"),
	}
	for _, tc := range []struct {
		expr string
		n    int
		want string
	}{
		{"(metric1 < metric2)", 4, "0 0 1 0"},
		{"(metric1 >= 30)", 4, "1 0 0 0"},
		{"(metric1 > 15 AND metric2 > 15)", 4, "1 0 0 0"},
		{"IF(c, a, b)", 5, "30 0 20 - -"},
		{"IF(c, 5, b)", 5, "5 5 20 - -"},
		{"IF(c, a, 5)", 5, "30 0 5 5 -"},
		{"IF(c, a)", 5, "30 0 - - -"},
		{"FILL(v, 0)", 8, "0 0 1 1 3 0 2 0"},
		{"DIFF(v)", 8, "- - - 0 2 - -1 -"},
		{"DIFF(FILL(v, 0))", 8, "- 0 1 0 2 -3 2 -2"},
		{"v + w", 8, "1 - 1 3 3 4 2 -"},
		{"v + 1", 8, "- - 2 2 4 - 3 -"},
		{"v / 0", 8, "- - - - - - - -"},
		{"MAX([v, w])", 8, "1 - 1 2 3 4 2 -"},
		{"IF(DIFF(FILL(v, 0)) > 0, DIFF(FILL(v, 0)), 0) + FILL(w, 0)", 8, "1 0 1 2 2 4 2 0"},
		{"-v * 2", 8, "- - -2 -2 -6 - -4 -"},
	} {
		ms := map[string]series{}
		for k, v := range metrics {
			if len(v) == tc.n {
				ms[k] = v
			}
		}
		got, err := evalMath(tc.expr, ms, tc.n)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{"FILL(v, REPEAT)", "MAX(v)", "SEARCH(v)", "v +", "nope + 1"} {
		if _, err := evalMath(bad, map[string]series{"v": ser("1")}, 1); err == nil {
			t.Errorf("%s: evaluated, want an error (not modelled)", bad)
		}
	}
}
