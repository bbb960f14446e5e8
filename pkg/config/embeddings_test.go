package config

import "testing"

// Config marks a rung an embedding model from its provider and model
// name, with the dimensions it takes: OpenAI's text-embedding-3 any,
// ada none, Titan V2 three lengths, Cohere Embed v3 its own 1,024 only;
// a chat model, a background entry, Cohere Embed v4 and the fake make no
// embeddings.
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
		{KindBedrock, "cohere.embed-english-v3", false, true, true, [3]int{1024}},
		{KindBedrock, "us.cohere.embed-multilingual-v3", false, true, true, [3]int{1024}},
		{KindBedrock, "cohere.embed-v4:0", false, false, false, [3]int{}},
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

// Cohere Embed v3 refuses a text over 2,048 characters, so its rung
// carries the bound; other embedding models count tokens, not
// characters, and carry none.
func TestCohereRungsBoundATextsCharacters(t *testing.T) {
	for model, want := range map[string]int{"cohere.embed-english-v3": 2048, "eu.cohere.embed-multilingual-v3": 2048,
		"amazon.titan-embed-text-v2:0": 0, "text-embedding-3-small": 0} {
		kind := KindBedrock
		if model == "text-embedding-3-small" {
			kind = KindOpenAI
		}
		if got := takes(kind, model, false).TextChars; got != want {
			t.Errorf("%s: TextChars %d, want %d", model, got, want)
		}
	}
}
