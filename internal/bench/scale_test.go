package bench

import (
	"strings"
	"testing"
	"time"
)

func TestMedianIsPerFigure(t *testing.T) {
	p := ScalePoint{Runs: []ScaleSample{
		{JobsPerSec: 300, CreateP99: 90 * time.Millisecond, NotSucceeded: 1},
		{JobsPerSec: 100, CreateP99: 10 * time.Millisecond},
		{JobsPerSec: 200, CreateP99: 50 * time.Millisecond, NotSucceeded: 2},
	}}
	m := p.Median()
	if m.JobsPerSec != 200 || m.CreateP99 != 50*time.Millisecond || m.NotSucceeded != 3 {
		t.Fatalf("median %+v, want 200 jobs/s, 50ms create p99, 3 not succeeded", m)
	}
	p.Runs = p.Runs[:2]
	if m := p.Median(); m.JobsPerSec != 200 {
		t.Fatalf("median of two runs %v, want their mean 200", m.JobsPerSec)
	}
}

// Heap and stacks grown between the readings, per job in flight.
func TestMemoryPerJobIsGrowthPerJobInFlight(t *testing.T) {
	m := Memory{InFlight: 1000, HeapBefore: 10 << 20, HeapDuring: 22 << 20, StackBefore: 8 << 20, StackDuring: 43 << 20}
	if got, want := m.PerJob(), float64(47<<20)/1000; got != want {
		t.Fatalf("per job %.0f bytes, want %.0f", got, want)
	}
	if r := m.Report(); !strings.Contains(r, "**48.1 KiB**") {
		t.Fatalf("report does not give 48.1 KiB per job:\n%s", r)
	}
}
