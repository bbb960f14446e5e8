package advise

import (
	"testing"
	"time"
)

func TestParseHop(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"rest", 29 * time.Second, false},
		{"REST", 29 * time.Second, false},
		{"http", 30 * time.Second, false},
		{"alb", 60 * time.Second, false},
		{"45s", 45 * time.Second, false},
		{" 2m ", 2 * time.Minute, false},
		{"0s", 0, true},
		{"-5s", 0, true},
		{"nlb", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		h, err := ParseHop(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseHop(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if h.Timeout != tt.want {
			t.Errorf("ParseHop(%q) = %s, want %s", tt.in, h.Timeout, tt.want)
		}
		if !tt.wantErr && h.Name == "" {
			t.Errorf("ParseHop(%q) has no name", tt.in)
		}
	}
}
