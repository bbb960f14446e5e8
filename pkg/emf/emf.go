// Package emf writes CloudWatch Embedded Metric Format lines: metrics as
// structured log lines that CloudWatch Logs turns into metrics, so the
// worker publishes metrics with no API call and no added latency.
package emf

import (
	"encoding/json"
	"io"
	"sort"
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
)

// Namespace is the CloudWatch namespace of every aijobs metric.
const Namespace = "aijobs"

// Writer emits one EMF line per metric to w.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	clock job.Clock
}

// New returns a Writer to w (os.Stdout in Lambda: its log stream).
func New(w io.Writer, clock job.Clock) *Writer { return &Writer{w: w, clock: clock} }

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Emit writes metric=value with unit ("Count", "Milliseconds", "None") and
// the given dimensions. It never fails the caller: metrics are best effort.
func (e *Writer) Emit(metric string, value float64, unit string, dims map[string]string) {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	line := map[string]any{
		"_aws": meta{Timestamp: e.clock.Now().UnixMilli(), CloudWatchMetrics: []directive{{
			Namespace: Namespace, Dimensions: [][]string{keys}, Metrics: []metricDef{{Name: metric, Unit: unit}},
		}}},
		metric: value,
	}
	for k, v := range dims {
		line[k] = v
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
}
