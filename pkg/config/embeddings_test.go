package config

import "testing"

// Config marks a rung an embedding model from its provider and model
// name, with the dimensions it takes: OpenAI's text-embedding-3 any,
// ada none, Titan V2 three lengths; a chat model, a background entry and
// the fake make no embeddings.
func TestEmbeddingRungsAreKnownByTheirModel(t *testing.T) {
	for _, tt := range []struct {
		kind, model string
		background  bool
		embeds      bool
		dims        bool
		only        [3]int
	}{
		{KindOpenAI, "text-embedding-3-small", false, true, true, [3]int{}},
		{KindOpenAI, "text-embedding-3-large", false, true, true, [3]int{}},
		{KindOpenAI, "text-embedding-ada-002", false, true, false, [3]int{}},
		{KindOpenAI, "text-embedding-3-small", true, false, true, [3]int{}},
		{KindOpenAI, "gpt-4o-mini", false, false, false, [3]int{}},
		{KindBedrock, "amazon.titan-embed-text-v2:0", false, true, true, [3]int{256, 512, 1024}},
		{KindBedrock, "us.anthropic.claude-haiku-4-5-20251001-v1:0", false, false, false, [3]int{}},
		{KindFake, "fake", false, false, false, [3]int{}},
	} {
		tk := takes(tt.kind, tt.model, tt.background)
		if got := embeds(tt.kind, tt.model, tt.background); got != tt.embeds || tk.Dimensions != tt.dims || tk.DimensionsIn != tt.only {
			t.Errorf("%s %s (background %v): embeds %v, dimensions %v %v; want %v, %v %v",
				tt.kind, tt.model, tt.background, got, tk.Dimensions, tk.DimensionsIn, tt.embeds, tt.dims, tt.only)
		}
	}
}
