package wire

import (
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"", false},
		{"a", true},
		{" ", true},
		{"~", true},
		{strings.Repeat("a", 255), true},
		{strings.Repeat("a", 256), false},
		{"a\x1fb", false},
		{"a\x7f", false},
		{"\x80", false},
		{"日本", false},
	}
	for _, tt := range tests {
		if got := ValidKey(tt.key); got != tt.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}
