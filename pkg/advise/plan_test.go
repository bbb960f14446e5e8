package advise

import (
	"strings"
	"testing"
	"time"
)

func TestPlanP99WithRetries(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		plan    Plan
		want    time.Duration
		wantErr string
	}{
		{"one attempt, no rungs", Plan{AttemptP99: 12 * s, Attempts: 1}, 12 * s, ""},
		{"three attempts, no waits", Plan{AttemptP99: 10 * s, Attempts: 3}, 30 * s, ""},
		{"attempts and backoffs", Plan{AttemptP99: 20 * s, Attempts: 3, Backoffs: []time.Duration{2 * s, 4 * s}}, 66 * s, ""},
		// The report of case (b): 2 attempts of a 30 s primary, each walking
		// a 15 s fallback rung, 5 s apart: 2 x 45 + 5 = 95 s.
		{"attempts, a fallback rung and a backoff", Plan{AttemptP99: 30 * s, Attempts: 2, Backoffs: []time.Duration{5 * s}, Rungs: []time.Duration{15 * s}}, 95 * s, ""},
		{"two rungs", Plan{AttemptP99: 5 * s, Attempts: 1, Rungs: []time.Duration{10 * s, 20 * s}}, 35 * s, ""},
		{"zero attempt p99", Plan{Attempts: 1}, 0, "attempt p99"},
		{"negative attempt p99", Plan{AttemptP99: -s, Attempts: 1}, 0, "attempt p99"},
		{"no attempts", Plan{AttemptP99: s}, 0, "at least one attempt"},
		{"too few backoffs", Plan{AttemptP99: s, Attempts: 3, Backoffs: []time.Duration{s}}, 0, "need 2 backoffs"},
		{"too many backoffs", Plan{AttemptP99: s, Attempts: 1, Backoffs: []time.Duration{s}}, 0, "need 0 backoffs"},
		{"negative backoff", Plan{AttemptP99: s, Attempts: 2, Backoffs: []time.Duration{-s}}, 0, "negative"},
		{"zero rung", Plan{AttemptP99: s, Attempts: 1, Rungs: []time.Duration{0}}, 0, "rung 1"},
		{"overflow", Plan{AttemptP99: time.Duration(1 << 62), Attempts: 4}, 0, "overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.plan.P99WithRetries()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("P99WithRetries = %s, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("P99WithRetries = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestP99(t *testing.T) {
	ms := time.Millisecond
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[99-i] = time.Duration(i+1) * ms // 100 ms .. 1 ms, unsorted
	}
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i+1) * ms
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    time.Duration
		wantErr bool
	}{
		{"one sample", []time.Duration{7 * ms}, 7 * ms, false},
		{"fewer than 100 is the maximum", []time.Duration{3 * ms, 9 * ms, 1 * ms}, 9 * ms, false},
		{"100 samples: the 99th", hundred, 99 * ms, false},
		{"1000 samples: the 990th", thousand, 990 * ms, false},
		{"empty", nil, 0, true},
		{"negative", []time.Duration{-ms, ms}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := P99(tt.samples)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("P99 = %s, %v; want %s (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if hundred[0] != 100*ms {
		t.Error("P99 reordered its argument")
	}
}
