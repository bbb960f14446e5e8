package config

import "testing"

// Only an OpenAI embedding rung's batch lane takes embedding jobs: its
// Batch API takes /v1/embeddings lines; Bedrock's batch wire here
// writes Converse records only, and a chat model's lane takes none.
func TestOnlyOpenAIsEmbeddingRungsBatchEmbeddings(t *testing.T) {
	for _, tt := range []struct {
		kind, model string
		want        bool
	}{
		{KindOpenAI, "text-embedding-3-small", true},
		{KindOpenAI, "text-embedding-ada-002", true},
		{KindOpenAI, "gpt-4o-mini", false},
		{KindBedrock, "amazon.titan-embed-text-v2:0", false},
		{KindFake, "fake", false},
	} {
		if got := takes(tt.kind, tt.model, false).BatchEmbeddings; got != tt.want {
			t.Errorf("%s %s: batch embeddings %v, want %v", tt.kind, tt.model, got, tt.want)
		}
	}
}
