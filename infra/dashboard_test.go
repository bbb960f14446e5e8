package main

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/emf"
)

// emitted is every metric the functions publish in the aijobs namespace,
// with the names of its dimensions, as their EMF lines carry them
// (recorded from pkg/worker's count/ended and attempt.go, and
// pkg/reconciler's emit). A CloudWatch metric is its name AND its exact
// dimension set: a graph or alarm that names other dimensions reads a
// metric nobody publishes, and stays empty without an error.
var emitted = map[string][]string{
	"JobsSucceeded":       nil,
	"JobsFailed":          {"ErrorClass"},
	"JobsAbandoned":       {"ErrorClass"},
	"JobsRetried":         {"ErrorClass"},
	"Fallbacks":           {"ErrorClass"},
	"CostCents":           nil,
	"AttemptDuration":     nil,
	"DuplicatesAbsorbed":  nil,
	"LeasesLost":          nil,
	"PoisonMessages":      nil,
	"ReconcileCandidates": nil,
	"Reconciled":          {"State"},
	"ReconcileErrors":     nil,
	"ReconcileBacklog":    nil,
	// The reconciler's DLQ sweep: jobs it marked failed/dead_lettered.
	"DeadLetteredJobs": nil,
	// The worker's count of jobs whose lease ended in the batch lane
	// before any collector took them (pkg/worker's recover).
	"AttemptsUncollected": nil,
	// The worker's count of limits held to its own share while the
	// buckets table did not answer (pkg/worker's take and enter).
	"LimitsLocal": {"Limit"},
	// The worker's counts of jobs deferred for spend (pkg/worker's
	// deferFor) and of settles past a share of a tenant's limit
	// (spendPassed).
	"SpendDeferred":     nil,
	"SpendShareReached": nil,
	// The worker's report of how old a message received three times or
	// more is (pkg/worker's noteReceives).
	"ReceivedManyTimesAge": nil,
	// The collector's count of batches a provider refused to make
	// (pkg/collector's refuse).
	"BatchesRefused": nil,
	// The notifier (pkg/notifier's count and Emit calls).
	"CallbackNotices":         nil,
	"StreamRecordsUnreadable": nil,
	"CallbacksDelivered":      nil,
	"CallbackLatency":         nil,
	"CallbacksGone":           nil,
	"CallbackFailures":        nil,
	"CallbacksSuperseded":     nil,
	"CallbacksDeadLettered":   nil,
	// The notifier's sweep of the callback DLQ (pkg/notifier.Sweep).
	"CallbackNoticesRedriven": nil,
}

// usedMetric is one aijobs metric a graph or an alarm reads.
type usedMetric struct {
	where, name string
	dims        []string
}

// widget is one dashboard widget: its title and its metric rows, each
// [namespace, name, dimension, value, ..., {options}] with the stack's
// references rendered (${Id}, ${Id.Attr}).
type widget struct {
	Properties struct {
		Title   string  `json:"title"`
		Metrics [][]any `json:"metrics"`
	} `json:"properties"`
}

// dashboardWidgets are the widgets of s's dashboard.
func dashboardWidgets(t *testing.T, s *synthesized) []widget {
	t.Helper()
	_, d := s.one(t, "AWS::CloudWatch::Dashboard", nil)
	var body struct {
		Widgets []widget `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(render(d["DashboardBody"])), &body); err != nil {
		t.Fatalf("dashboard body: %v", err)
	}
	return body.Widgets
}

// dashboardMetrics lists the aijobs metrics the dashboard graphs, from
// metric rows ["aijobs", name, dim, value, ..., {options}] and from SEARCH
// expressions ('{aijobs,Dim} MetricName="Name"').
func dashboardMetrics(t *testing.T, s *synthesized) []usedMetric {
	t.Helper()
	search := regexp.MustCompile(`SEARCH\('\{([^}]*)\} MetricName="([^"]+)"'`)
	var out []usedMetric
	for _, w := range dashboardWidgets(t, s) {
		for _, row := range w.Properties.Metrics {
			if len(row) == 0 {
				continue
			}
			if opts, ok := row[0].(map[string]any); ok {
				expr, _ := opts["expression"].(string)
				for _, m := range search.FindAllStringSubmatch(expr, -1) {
					schema := strings.Split(m[1], ",")
					if schema[0] == emf.Namespace {
						out = append(out, usedMetric{w.Properties.Title, m[2], schema[1:]})
					}
				}
				continue
			}
			if row[0] != emf.Namespace {
				continue
			}
			u := usedMetric{where: w.Properties.Title, name: row[1].(string)}
			for i := 2; i+1 < len(row); i += 2 {
				if k, ok := row[i].(string); ok {
					u.dims = append(u.dims, k)
				}
			}
			out = append(out, u)
		}
	}
	return out
}

// alarmMetrics lists the aijobs metrics the alarms read.
func alarmMetrics(s *synthesized) []usedMetric {
	var out []usedMetric
	for _, r := range s.resources("AWS::CloudWatch::Alarm") {
		p := r["Properties"].(map[string]any)
		add := func(m map[string]any) {
			if m["Namespace"] != emf.Namespace {
				return
			}
			u := usedMetric{where: "alarm " + p["AlarmName"].(string), name: m["MetricName"].(string)}
			dims, _ := m["Dimensions"].([]any)
			for _, d := range dims {
				u.dims = append(u.dims, d.(map[string]any)["Name"].(string))
			}
			out = append(out, u)
		}
		if p["MetricName"] != nil {
			add(p)
		}
		qs, _ := p["Metrics"].([]any)
		for _, q := range qs {
			if ms, ok := q.(map[string]any)["MetricStat"].(map[string]any); ok {
				add(ms["Metric"].(map[string]any))
			}
		}
	}
	return out
}

// Every aijobs metric on the dashboard and in the alarms is one the
// functions publish, with exactly the dimensions they publish it with.
func TestDashboardAndAlarmsReadWhatIsEmitted(t *testing.T) {
	s := defaults(t)
	used := append(dashboardMetrics(t, s), alarmMetrics(s)...)
	if len(used) < 10 {
		t.Fatalf("found only %d aijobs metrics: %v", len(used), used)
	}
	// With a batch lane, the collector's row and alarms too.
	used = append(used, dashboardMetrics(t, batched(t))...)
	used = append(used, alarmMetrics(batched(t))...)
	for _, u := range used {
		want, ok := emitted[u.name]
		if !ok {
			t.Errorf("%s: %s is not a metric the functions emit", u.where, u.name)
			continue
		}
		got := append([]string(nil), u.dims...)
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %s with dimensions %v, but it is emitted with %v", u.where, u.name, got, want)
		}
	}
	// The reconciler's row graphs each of its metrics.
	graphed := map[string]bool{}
	for _, u := range dashboardMetrics(t, s) {
		graphed[u.name] = true
	}
	for _, name := range []string{"ReconcileCandidates", "Reconciled", "ReconcileErrors", "ReconcileBacklog", "DeadLetteredJobs"} {
		if !graphed[name] {
			t.Errorf("the dashboard does not graph %s", name)
		}
	}
}
