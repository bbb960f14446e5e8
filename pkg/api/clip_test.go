package api_test

import (
	"testing"
	"unicode/utf8"

	"github.com/aijobs/aijobs/pkg/api"
)

func TestClipBoundsWithoutSplittingACharacter(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc..."},
		{"aé", 2, "a..."}, // é is two bytes: cutting at 2 would keep half of it
		{"日本", 4, "日..."},
		{"日本", 2, "..."},
	} {
		got := api.Clip(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
