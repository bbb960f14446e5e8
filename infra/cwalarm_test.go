package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

// A model of how CloudWatch evaluates a metric alarm, so the tests can run
// the synthesized alarms over simulated data. It follows the CloudWatch
// User Guide, "Using Amazon CloudWatch alarms" (AlarmThatSendsEmail.html):
//
//   - "For any period of one minute or longer, an alarm is evaluated every
//     minute and the evaluation is based on the window of time defined by
//     the Period and Evaluation Periods": each evaluation at time now
//     fetches the periods [now-k*Period, now-(k-1)*Period), k = 1, 2, ...;
//   - it fetches more periods than Evaluation Periods (N), the evaluation
//     range; the guide's examples fetch 5 for N = 3, modelled as N + 2;
//   - with at least N real datapoints in the range, the most recent N real
//     ones decide: ALARM if at least Datapoints to Alarm (M) breach;
//   - with fewer, the missing ones are filled per TreatMissingData and "all
//     real data points in the evaluation range are included"; breaching and
//     notBreaching fill breaching or good points; missing and ignore fill
//     nothing, with no real point at all giving INSUFFICIENT_DATA or the
//     current state; "premature alarm state": with missing, ALARM when
//     fewer than M points are real and the oldest breaching one is at
//     least M periods old with only breaching or missing ones after it
//     (ignore keeps the current state then). TestAlarmEvaluationModel
//     checks this against the guide's two tables;
//   - a math expression's metrics all use the alarm's period ("Each metric
//     must be using the same period").
//
// Datapoints arrive late: a sample becomes visible to evaluations only
// from its visible time on, while it keeps its timestamp (this is how a
// late SQS datapoint lands in an old period).

// sample is one raw datapoint: its timestamp, value, and when CloudWatch
// can first return it.
type sample struct {
	at, visible time.Duration
	value       float64
}

// metricStore holds raw samples by metric key (metricKey), each list in
// timestamp order.
type metricStore map[string][]sample

// metricKey names a metric by namespace, name and dimensions, with
// dimension values rendered from the template (render).
func metricKey(namespace, name string, dims map[string]string) string {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(namespace + "/" + name)
	for _, k := range keys {
		b.WriteString("/" + k + "=" + dims[k])
	}
	return b.String()
}

func (m metricStore) put(key string, at, visible time.Duration, v float64) {
	list := append(m[key], sample{at: at, visible: visible, value: v})
	if n := len(list); n > 1 && list[n-1].at < list[n-2].at {
		sort.SliceStable(list, func(i, j int) bool { return list[i].at < list[j].at })
	}
	m[key] = list
}

// stat is a statistic over the samples with timestamps in [from, to) that
// are visible at now; nil when there are none.
func (m metricStore) stat(key, stat string, from, to, now time.Duration) *float64 {
	var n, sum float64
	lo, hi := math.Inf(1), math.Inf(-1)
	list := m[key]
	for _, s := range list[sort.Search(len(list), func(i int) bool { return list[i].at >= from }):] {
		if s.at >= to {
			break
		}
		if s.visible > now {
			continue
		}
		n++
		sum += s.value
		lo, hi = math.Min(lo, s.value), math.Max(hi, s.value)
	}
	if n == 0 {
		return nil
	}
	switch stat {
	case "Sum":
		return pt(sum)
	case "Average":
		return pt(sum / n)
	case "Maximum":
		return pt(hi)
	case "Minimum":
		return pt(lo)
	case "SampleCount":
		return pt(n)
	}
	panic("statistic " + stat + " is not modelled")
}

// metricQuery is one metric of an alarm.
type metricQuery struct {
	key, stat string
}

// alarmDef is an alarm as the template defines it.
type alarmDef struct {
	name                 string
	period               time.Duration
	evaluations, toAlarm int
	threshold            float64
	comparison, missing  string
	expression           string                 // "" for a one-metric alarm
	metrics              map[string]metricQuery // by id; "" for a one-metric alarm
}

// parseAlarm reads an AWS::CloudWatch::Alarm's properties.
func parseAlarm(t *testing.T, p map[string]any) alarmDef {
	t.Helper()
	a := alarmDef{
		name:        fmt.Sprint(p["AlarmName"]),
		evaluations: int(num(t, p["EvaluationPeriods"], "EvaluationPeriods")),
		toAlarm:     int(num(t, p["EvaluationPeriods"], "EvaluationPeriods")),
		threshold:   num(t, p["Threshold"], "Threshold"),
		comparison:  p["ComparisonOperator"].(string),
		missing:     "missing", // CloudWatch's default
		metrics:     map[string]metricQuery{},
	}
	if d, ok := p["DatapointsToAlarm"]; ok {
		a.toAlarm = int(num(t, d, "DatapointsToAlarm"))
	}
	if m, ok := p["TreatMissingData"].(string); ok {
		a.missing = m
	}
	query := func(m map[string]any) metricQuery {
		dims := map[string]string{}
		ds, _ := m["Dimensions"].([]any)
		for _, d := range ds {
			dm := d.(map[string]any)
			dims[dm["Name"].(string)] = render(dm["Value"])
		}
		return metricQuery{key: metricKey(m["Namespace"].(string), m["MetricName"].(string), dims)}
	}
	if p["MetricName"] != nil {
		q := query(p)
		q.stat = p["Statistic"].(string)
		a.metrics[""] = q
		a.period = time.Duration(num(t, p["Period"], "Period")) * time.Second
		return a
	}
	periods := map[float64]bool{}
	for _, raw := range p["Metrics"].([]any) {
		m := raw.(map[string]any)
		if e, ok := m["Expression"].(string); ok {
			if a.expression != "" {
				t.Fatalf("alarm %s: more than one expression is not modelled", a.name)
			}
			a.expression = e
			continue
		}
		ms := m["MetricStat"].(map[string]any)
		q := query(ms["Metric"].(map[string]any))
		q.stat = ms["Stat"].(string)
		a.metrics[m["Id"].(string)] = q
		periods[num(t, ms["Period"], "Period")] = true
	}
	if len(periods) != 1 {
		t.Fatalf("alarm %s: metrics with periods %v; an alarm's metrics must all use one period", a.name, periods)
	}
	for p := range periods {
		a.period = time.Duration(p) * time.Second
	}
	if a.expression == "" {
		q := a.metrics
		if len(q) != 1 {
			t.Fatalf("alarm %s: %d metrics and no expression", a.name, len(q))
		}
		for id, m := range q {
			delete(a.metrics, id)
			a.metrics[""] = m
		}
	}
	return a
}

// points is what the alarm sees at now: one value per period of the
// evaluation range, oldest first.
func (a alarmDef) points(t *testing.T, store metricStore, now time.Duration) series {
	t.Helper()
	n := a.evaluations + 2
	fetch := func(q metricQuery) series {
		out := make(series, n)
		for k := 1; k <= n; k++ {
			to := now - time.Duration(k-1)*a.period
			out[n-k] = store.stat(q.key, q.stat, to-a.period, to, now)
		}
		return out
	}
	if a.expression == "" {
		return fetch(a.metrics[""])
	}
	ms := map[string]series{}
	for id, q := range a.metrics {
		ms[id] = fetch(q)
	}
	out, err := evalMath(a.expression, ms, n)
	if err != nil {
		t.Fatalf("alarm %s: %v", a.name, err)
	}
	return out
}

func (a alarmDef) breaches(v float64) bool {
	switch a.comparison {
	case "GreaterThanOrEqualToThreshold":
		return v >= a.threshold
	case "GreaterThanThreshold":
		return v > a.threshold
	case "LessThanThreshold":
		return v < a.threshold
	case "LessThanOrEqualToThreshold":
		return v <= a.threshold
	}
	panic("comparison " + a.comparison + " is not modelled")
}

// decide is the alarm's state from the datapoints of its evaluation range
// (oldest first), given its current state.
func (a alarmDef) decide(points series, current string) string {
	n, m := a.evaluations, a.toAlarm
	var real []bool // breaching, oldest first
	oldestBreach := -1
	for i, p := range points {
		if p == nil {
			continue
		}
		real = append(real, a.breaches(*p))
		if oldestBreach < 0 && a.breaches(*p) {
			oldestBreach = len(points) - i // periods from the end, 1 = newest
		}
	}
	count := func(bs []bool) int {
		c := 0
		for _, b := range bs {
			if b {
				c++
			}
		}
		return c
	}
	state := func(breaching int) string {
		if breaching >= m {
			return "ALARM"
		}
		return "OK"
	}
	if len(real) >= n {
		return state(count(real[len(real)-n:]))
	}
	fill := n - len(real)
	switch a.missing {
	case "breaching":
		return state(count(real) + fill)
	case "notBreaching":
		return state(count(real))
	}
	// missing or ignore: nothing is filled in
	if len(real) == 0 {
		if a.missing == "ignore" {
			return current
		}
		return "INSUFFICIENT_DATA"
	}
	if len(real) < m && count(real) > 0 {
		// premature alarm state: the oldest breaching point is old enough
		// and everything after it breaches or is missing
		recentOK := true
		for i := len(points) - oldestBreach + 1; i < len(points); i++ {
			if points[i] != nil && !a.breaches(*points[i]) {
				recentOK = false
			}
		}
		if oldestBreach >= m && recentOK && a.missing == "missing" {
			return "ALARM"
		}
		return current
	}
	return state(count(real))
}

// transition is an alarm entering a state at an evaluation.
type transition struct {
	at    time.Duration
	state string
}

// run evaluates the alarm every minute from start to end (as CloudWatch
// does for periods of a minute or more) and returns its state changes;
// it starts OK.
func (a alarmDef) run(t *testing.T, store metricStore, start, end time.Duration) []transition {
	t.Helper()
	state := "OK"
	var out []transition
	for now := start; now <= end; now += time.Minute {
		if next := a.decide(a.points(t, store, now), state); next != state {
			state = next
			out = append(out, transition{now, state})
		}
	}
	return out
}

// The decision model against the User Guide's two tables ("How alarm
// state is evaluated when data is missing"): N = 3 with M = 3 and M = 2,
// evaluation range 5, X breaching, 0 not, - missing; columns MISSING,
// IGNORE, BREACHING, NOT BREACHING ("retain" keeps the current state).
func TestAlarmEvaluationModel(t *testing.T) {
	for _, tc := range []struct {
		m      int
		points string
		want   [4]string
	}{
		{3, "0 - X - X", [4]string{"OK", "OK", "OK", "OK"}},
		{3, "0 - - - -", [4]string{"OK", "OK", "OK", "OK"}},
		{3, "- - - - -", [4]string{"INSUFFICIENT_DATA", "retain", "ALARM", "OK"}},
		{3, "0 X X - X", [4]string{"ALARM", "ALARM", "ALARM", "ALARM"}},
		{3, "- - X - -", [4]string{"ALARM", "retain", "ALARM", "OK"}},
		{2, "0 - X - X", [4]string{"ALARM", "ALARM", "ALARM", "ALARM"}},
		{2, "0 0 X 0 X", [4]string{"ALARM", "ALARM", "ALARM", "ALARM"}},
		{2, "0 - X - -", [4]string{"OK", "OK", "ALARM", "OK"}},
		{2, "- - - - 0", [4]string{"OK", "OK", "ALARM", "OK"}},
		{2, "- - - X -", [4]string{"ALARM", "retain", "ALARM", "OK"}},
	} {
		points := ser(strings.NewReplacer("X", "1").Replace(tc.points))
		for i, missing := range []string{"missing", "ignore", "breaching", "notBreaching"} {
			a := alarmDef{evaluations: 3, toAlarm: tc.m, threshold: 1, comparison: "GreaterThanOrEqualToThreshold", missing: missing}
			want := tc.want[i]
			if want == "retain" {
				want = "current"
			}
			if got := a.decide(points, "current"); got != want {
				t.Errorf("M=%d %q %s: %s, want %s", tc.m, tc.points, missing, got, want)
			}
		}
	}
}

// The evaluation windows and late data: a sample counts in the period of
// its timestamp, but only from the evaluation after it becomes visible.
func TestAlarmWindowsAndLateData(t *testing.T) {
	store := metricStore{}
	key := metricKey("ns", "m", nil)
	store.put(key, 10*time.Minute+30*time.Second, 26*time.Minute, 1) // 15 minutes late
	a := alarmDef{name: "late", period: time.Minute, evaluations: 20, toAlarm: 1, threshold: 1,
		comparison: "GreaterThanOrEqualToThreshold", missing: "notBreaching",
		expression: "FILL(m, 0)", metrics: map[string]metricQuery{"m": {key: key, stat: "Sum"}}}
	got := a.run(t, store, 0, time.Hour)
	// visible at 26m, in ALARM from then; the point (period 10m..11m)
	// leaves the 20 most recent periods at 31m
	want := []transition{{26 * time.Minute, "ALARM"}, {31 * time.Minute, "OK"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("late sample: %v, want %v", got, want)
	}
	a.evaluations = 2
	if got := a.run(t, store, 0, time.Hour); len(got) != 0 {
		t.Errorf("two periods of one minute cannot see a sample 15 minutes late, got %v", got)
	}
}
