package config

import "strings"

// embeds reports whether a rung of kind's model makes embeddings
// (docs/embeddings.md): OpenAI's text-embedding models, called at
// POST /v1/embeddings, which a background entry (the Responses API)
// does not speak.
func embeds(kind, model string, background bool) bool {
	return kind == KindOpenAI && !background && strings.HasPrefix(model, "text-embedding-")
}

// embeddingDimensions reports whether kind's embedding model shortens
// its vectors to a caller's dimensions: OpenAI's "text-embedding-3 and
// later models" take `dimensions`, text-embedding-ada-002 does not
// (platform.openai.com/docs/api-reference/embeddings/create).
func embeddingDimensions(kind, model string) bool {
	return kind == KindOpenAI && strings.HasPrefix(model, "text-embedding-3")
}
