package config

import "strings"

// embeds reports whether a rung of kind's model makes embeddings
// (docs/embeddings.md): OpenAI's text-embedding models, called at
// POST /v1/embeddings, which a background entry (the Responses API)
// does not speak.
func embeds(kind, model string, background bool) bool {
	switch kind {
	case KindOpenAI:
		return !background && strings.HasPrefix(model, "text-embedding-")
	case KindBedrock:
		return titanEmbedding(model) || cohereEmbedding(model)
	}
	return false
}

// titanEmbedding reports whether a Bedrock model is Titan Text
// Embeddings V2, by its id or an inference profile's.
func titanEmbedding(model string) bool { return strings.Contains(model, "amazon.titan-embed-text-v2") }

// cohereEmbedding reports whether a Bedrock model is Cohere Embed v3,
// English or multilingual; Bedrock's other embedding models (Titan V1,
// Cohere Embed v4) are not rungs (docs/embeddings.md, "Bedrock").
func cohereEmbedding(model string) bool {
	return strings.Contains(model, "cohere.embed-english-v3") || strings.Contains(model, "cohere.embed-multilingual-v3")
}

// embeddingTextChars is the most characters one text may hold on kind's
// embedding model, where the model refuses longer ones by characters:
// Cohere Embed v3's "Characters ... 2048"
// (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v3.html).
func embeddingTextChars(kind, model string) int {
	if kind == KindBedrock && cohereEmbedding(model) {
		return 2048
	}
	return 0
}

// embeddingDimensions reports whether kind's embedding model shortens
// its vectors to a caller's dimensions, and the only lengths it takes
// (all zero: any): OpenAI's "text-embedding-3 and
// later models" take `dimensions`, text-embedding-ada-002 does not
// (platform.openai.com/docs/api-reference/embeddings/create).
func embeddingDimensions(kind, model string) (takes bool, only [3]int) {
	switch {
	case kind == KindOpenAI && strings.HasPrefix(model, "text-embedding-3"):
		return true, [3]int{}
	case kind == KindBedrock && titanEmbedding(model):
		// "The following values are accepted: 1024 (default), 512, 256"
		// (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html).
		return true, [3]int{256, 512, 1024}
	case kind == KindBedrock && cohereEmbedding(model):
		// Embed v3 makes 1,024 dimensions and takes no length: asking its
		// own is allowed, any other refused.
		return true, [3]int{1024}
	}
	return false, [3]int{}
}
