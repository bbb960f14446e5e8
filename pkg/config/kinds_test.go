package config

import (
	"testing"
	"time"
)

// A default is shown as a person would type it, and parses back to itself.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 500 * time.Millisecond: "500ms", 1500 * time.Millisecond: "1.5s", 2 * time.Second: "2s",
		4 * time.Minute: "240s", 180 * time.Second: "180s", 1082 * time.Second: "1082s",
		5 * time.Minute: "5m", 90 * time.Minute: "90m", 24 * time.Hour: "24h", 36 * time.Hour: "36h",
	} {
		got := formatDuration(d)
		if got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := parseDuration(got); err != nil || back != d {
			t.Errorf("%q parses to %v, %v; want %v", got, back, err, d)
		}
	}
}
