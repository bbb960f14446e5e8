package chaos

import (
	"testing"
	"time"
)

// TestPercentiles: nearest rank over the sorted durations; none gives zeros.
func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	if got := percentiles(ds); got != [2]time.Duration{51 * time.Second, 100 * time.Second} {
		t.Fatalf("percentiles of 1..100 s = %v, want p50 51 s and p99 100 s", got)
	}
	if got := percentiles(nil); got != [2]time.Duration{} {
		t.Fatalf("percentiles of nothing = %v", got)
	}
}
