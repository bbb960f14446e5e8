package job

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// The bounds of an embedding input (docs/embeddings.md).
const (
	// MaxTexts is the most texts one embedding job takes. The issue asks
	// for 10,000 in one job; more would make one answer of up to
	// MaxTexts × MaxDimensions × 4 bytes (before base64) that a worker
	// holds in memory whole, already 123 MB at this bound.
	MaxTexts = 10_000
	// MaxDimensions is the largest vector any embedding model we call
	// makes: OpenAI's text-embedding-3-large, 3,072
	// (platform.openai.com/docs/guides/embeddings, "Embedding models").
	MaxDimensions = 3072
)

// Embeds reports whether in asks for embeddings (texts) rather than a
// chat answer (messages).
func (in Input) Embeds() bool { return in.Texts != nil }

// checkEmbedding holds an embedding input to its rules: one to MaxTexts
// non-empty texts (a provider refuses an empty one: OpenAI's input
// "cannot be an empty string"), dimensions 0 (the model's own) or 1 to
// MaxDimensions, and nothing of a chat input, each refused by its path.
func checkEmbedding(in Input) error {
	switch {
	case in.Texts == nil:
		return invalid("input.dimensions", "dimensions belongs to an embedding input: give input.texts")
	case in.Messages != nil:
		return invalid("input.texts", "give exactly one of input.messages and input.texts")
	case in.MaxTokens != 0:
		return invalid("input.max_tokens", "an embedding input (input.texts) takes no max_tokens")
	case in.Temperature != nil:
		return invalid("input.temperature", "an embedding input (input.texts) takes no temperature")
	case len(in.Texts) == 0 || len(in.Texts) > MaxTexts:
		return invalid("input.texts", "input.texts must hold 1 to %d texts", MaxTexts)
	case in.Dimensions < 0 || in.Dimensions > MaxDimensions:
		return invalid("input.dimensions", "dimensions must be between 1 and %d", MaxDimensions)
	}
	if field := chatOption(in.Options); field != "" {
		return invalid(field, "an embedding input (input.texts) takes no %s", field)
	}
	for i, t := range in.Texts {
		if t == "" {
			return invalid(fmt.Sprintf("input.texts[%d]", i), "a text must not be empty")
		}
	}
	return nil
}

// chatOption is the path of the first chat option o sets, "" when none.
func chatOption(o Options) string {
	switch {
	case o.TopP != nil:
		return "input.top_p"
	case o.Stop != nil:
		return "input.stop"
	case o.Seed != nil:
		return "input.seed"
	case o.Reasoning != nil:
		return "input.reasoning"
	case o.ResponseFormat != nil:
		return "input.response_format"
	}
	return ""
}

// TextsCeiling over-estimates the tokens of texts as PromptCeiling does a
// chat prompt's: one token per two bytes, where providers count about
// four, rounded up text by text. An embedding call adds no tokens of its
// own around its inputs (OpenAI's usage counts prompt_tokens only).
func TextsCeiling(texts []string) int64 {
	var n int64
	for _, t := range texts {
		n += (int64(len(t)) + 1) / 2
	}
	return n
}

// Ceiling is the prompt ceiling of in, a chat input's or an embedding
// input's.
func (in Input) Ceiling() int64 {
	if in.Embeds() {
		return TextsCeiling(in.Texts)
	}
	return PromptCeiling(in.Messages)
}

// embeddingRefusal is why rung g cannot take in, by field, or "" when it
// can: an embedding model takes texts only, a chat model messages only,
// and dimensions only where the model shortens its vectors.
func (g Rung) embeddingRefusal(in Input) (field, why string) {
	switch {
	case in.Embeds() && !g.Embeds:
		return "input.texts", "is a chat model, which takes no texts: name a route of embedding models"
	case !in.Embeds() && g.Embeds:
		return "input.messages", "is an embedding model, which takes texts, not messages: give input.texts"
	case in.Dimensions != 0 && !g.Takes.Dimensions:
		return "input.dimensions", "takes no dimensions"
	case in.Dimensions != 0 && g.Takes.DimensionsIn != [3]int{} && !slices.Contains(g.Takes.DimensionsIn[:], in.Dimensions):
		return "input.dimensions", fmt.Sprintf("takes dimensions %v only", slices.DeleteFunc(slices.Clone(g.Takes.DimensionsIn[:]), func(n int) bool { return n == 0 }))
	}
	return g.textCharsRefusal(in)
}

// textCharsRefusal names the first text longer than rung g takes: a
// model that refuses a long text is held to it at create, so the job is
// refused whole rather than failing mid-attempt with calls already paid.
func (g Rung) textCharsRefusal(in Input) (field, why string) {
	if g.Takes.TextChars == 0 {
		return "", ""
	}
	for i, t := range in.Texts {
		if n := utf8.RuneCountInString(t); n > g.Takes.TextChars {
			return fmt.Sprintf("input.texts[%d]", i), fmt.Sprintf("is %d characters; takes at most %d a text", n, g.Takes.TextChars)
		}
	}
	return "", ""
}

// offersBatch reports whether g offers the batch lane to a job allowing
// lanes (nil: any).
func (g Rung) offersBatch(lanes []Lane) bool {
	for _, o := range g.Offers() {
		if o.Lane == Batch && allows(lanes, Batch) {
			return true
		}
	}
	return false
}
