package openai

import (
	"slices"
	"testing"
)

// A call holds at most 2,048 texts and a ceiling of 300,000 tokens; a
// text alone over the cap goes alone.
func TestEmbedCallsKeepToTheRequestsLimits(t *testing.T) {
	many := func(n int, s string) []string { return slices.Repeat([]string{s}, n) }
	big := string(make([]byte, 2*maxEmbeddingTokens+2)) // ceiling 300,001
	for _, tt := range []struct {
		name  string
		texts []string
		want  []int
	}{
		{"2048", many(2048, "a"), []int{2048}},
		{"2049", many(2049, "a"), []int{2048, 1}},
		{"4096", many(4096, "a"), []int{2048, 2048}},
		{"the token cap exactly", many(3, string(make([]byte, 200_000))), []int{3}},
		{"one over the cap", many(4, string(make([]byte, 200_000))), []int{3, 1}},
		{"a text over the cap alone", []string{"a", big, "b"}, []int{1, 1, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, c := range embedCalls(tt.texts) {
				got = append(got, len(c))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("calls of %v, want %v", got, tt.want)
			}
		})
	}
}
