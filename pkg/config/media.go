package config

import (
	"regexp"

	"github.com/aijobs/aijobs/pkg/job"
)

// takes are what a rung of kind's model takes: its options
// (optionsTaken), its response format (formatTakes) and the content
// parts it reads (media).
func takes(kind, model string, background bool) job.Takes {
	t := optionsTaken(kind, model, background)
	t.ResponseFormat, t.ForcedTool = formatTakes(kind, model)
	t.Images, t.Documents = media(kind, model)
	t.Dimensions, t.DimensionsIn = embeddingDimensions(kind, model)
	t.TextChars = embeddingTextChars(kind, model)
	// Only OpenAI's batch wire takes embeddings (/v1/embeddings lines):
	// docs/embeddings.md, "The batch lane".
	t.BatchEmbeddings = kind == KindOpenAI && embeds(kind, model, background)
	return t
}

// openAIVision matches OpenAI's models with vision, which read images and
// PDF files alike ("OpenAI models with vision capabilities can also
// accept PDF files", platform.openai.com/docs/guides/pdf-files; the
// models page names them): gpt-4o, gpt-4.1, gpt-4.5, gpt-4-turbo, the
// gpt-5 family, o1, o3 and o4-mini, but not o1-mini or o3-mini.
var openAIVision = regexp.MustCompile(`^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-5|o1|o3|o4-mini)($|-)`)

// textOnlyOpenAI are the mini reasoning models without vision.
var textOnlyOpenAI = regexp.MustCompile(`^(o1-mini|o1-preview|o3-mini)($|-)`)

// claudeImages matches the Claude models that read images (every Claude 3
// and 4 model, docs.anthropic.com/en/docs/build-with-claude/vision), bare
// or as Bedrock names them; claudeDocuments those that read PDFs (Claude
// 3.5 Sonnet and later, docs.anthropic.com/en/docs/build-with-claude/pdf-support;
// on Bedrock, the Converse document block).
var (
	claudeImages    = regexp.MustCompile(`(^|\.)claude-(3|opus-4|sonnet-4|haiku-4)`)
	claudeDocuments = regexp.MustCompile(`(^|\.)claude-(3-5-sonnet|3-7-sonnet|3-5-haiku|opus-4|sonnet-4|haiku-4)`)
	// novaMedia matches the Amazon Nova models that read images and
	// documents (Pro, Lite, Premier; Micro is text only:
	// docs.aws.amazon.com/nova/latest/userguide/modalities.html).
	novaMedia = regexp.MustCompile(`(^|\.)amazon\.nova-(pro|lite|premier)`)
)

// media reports whether a rung of kind's model reads image parts and
// document parts (docs/providers.md, "Content parts"): a model nobody
// described reads neither, so a job with one is refused at create rather
// than sent where it would be refused or not seen.
func media(kind, model string) (images, documents bool) {
	switch kind {
	case KindFake:
		return true, true
	case KindOpenAI:
		v := openAIVision.MatchString(model) && !textOnlyOpenAI.MatchString(model)
		return v, v
	case KindAnthropic, KindBedrock:
		if novaMedia.MatchString(model) {
			return true, true
		}
		return claudeImages.MatchString(model), claudeDocuments.MatchString(model)
	}
	return false, false
}
