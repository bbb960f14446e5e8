package job

import (
	"fmt"
	"slices"
)

// The bounds of the sampling options, the strictest a provider sets, so
// that a job valid on one rung is not refused for its shape on another.
const (
	// MaxStop is OpenAI's limit on stop sequences ("Up to 4 sequences",
	// chat completions `stop`; help.openai.com/en/articles/5072263);
	// Bedrock's Converse takes up to 2,500 and Anthropic names no limit.
	MaxStop = 4
	// MaxStopBytes bounds one stop sequence. No provider documents a
	// limit; this one keeps a record's options small whatever is sent.
	MaxStopBytes = 256
	// MinThinkingBudget is Anthropic's floor for an extended thinking
	// budget: a smaller one is a 400 ("thinking.budget_tokens: must be
	// >= 1024 and < max_tokens"; docs.anthropic.com/en/docs/build-with-claude/extended-thinking,
	// and on Bedrock docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html).
	MinThinkingBudget = 1024
)

// Efforts are the reasoning efforts a job may ask for: the three every
// OpenAI reasoning model takes (platform.openai.com/docs/api-reference/chat/create,
// reasoning_effort; "minimal", "none" and "xhigh" exist on some models
// only).
var Efforts = []string{"low", "medium", "high"}

// Options are the sampling and reasoning options of an input beyond
// max_tokens and temperature (docs/providers.md, "Sampling and reasoning
// options"). Each is mapped to every provider that takes it; a route
// with a rung that cannot honour one refuses the job at create
// (Route.CheckOptions): an option is never dropped silently.
type Options struct {
	TopP *float64 `json:"top_p,omitempty"`
	Stop []string `json:"stop,omitempty"`
	Seed *int64   `json:"seed,omitempty"`
	// Reasoning asks the model to reason before it answers, in one or
	// both of the two ways providers take: an effort (OpenAI's reasoning
	// models) and a budget of thinking tokens (Claude's extended
	// thinking). A rung takes the one its provider knows and needs it
	// given.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// ResponseFormat asks for an answer that a JSON Schema accepts
	// (docs/providers.md, "Structured output"); the worker validates
	// every answer against it.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// Reasoning is the reasoning option: Effort one of Efforts, BudgetTokens
// at least MinThinkingBudget and below the output cap; at least one set.
type Reasoning struct {
	Effort       string `json:"effort,omitempty"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Takes are the Options a rung's provider and model family honour, and
// the content parts its model reads, set by config from them
// (pkg/config/families.go, media.go): the zero value takes none, so a
// rung nobody described refuses an option or a part rather than drops it.
type Takes struct {
	TopP, Stop, Seed bool
	// Effort takes reasoning.effort; Budget reasoning.budget_tokens.
	Effort, Budget bool
	// TemperatureOrTopP: the model refuses temperature and top_p together
	// (Claude 4.x: "`temperature` and `top_p` cannot both be specified
	// for this model").
	TemperatureOrTopP bool
	// ReasoningTopP is the lowest top_p the model takes while it reasons,
	// a temperature other than 1 being then refused too (zero: it reasons
	// with any, as the fake provider does): 1 on
	// OpenAI's reasoning models (temperature and top_p only at effort
	// "none", platform.openai.com/docs/guides/latest-model), 0.95 with
	// Claude's thinking ("Thinking isn't compatible with temperature or
	// top_k modifications", top_p "between 1 and 0.95", extended
	// thinking guide, "Feature compatibility").
	ReasoningTopP float64
	// ResponseFormat takes response_format; ForcedTool says the rung
	// carries it as a forced tool call, which Claude refuses with a
	// thinking budget ("Thinking may not be enabled when tool_choice
	// forces tool use";
	// docs.anthropic.com/en/docs/build-with-claude/extended-thinking,
	// "Extended thinking with tool use").
	ResponseFormat, ForcedTool bool
	// Images and Documents: the model reads image and document parts
	// (docs/providers.md, "Content parts").
	Images, Documents bool
	// Dimensions: the embedding model shortens its vectors to the
	// dimensions asked (docs/embeddings.md), and DimensionsIn are the
	// only lengths it takes (all zero: any up to MaxDimensions). An array,
	// not a slice, so that Takes stays comparable.
	Dimensions   bool
	DimensionsIn [3]int
	// TextChars is the most characters (runes) one text may hold on an
	// embedding model that refuses longer ones outright, Cohere Embed v3's
	// 2,048 (0: no bound in characters; docs/embeddings.md, "Bedrock").
	TextChars int
	// BatchEmbeddings: the rung's batch lane takes embedding jobs, its
	// provider's batch wire taking embeddings requests (OpenAI's Batch
	// API, /v1/embeddings; docs/embeddings.md, "The batch lane").
	BatchEmbeddings bool
}

// checkOptions holds in's Options to the rules every provider's bounds
// allow, whichever rung is reached.
func checkOptions(in Input) error {
	if in.TopP != nil && (*in.TopP < 0 || *in.TopP > 1) {
		return invalid("input.top_p", "top_p must be between 0 and 1")
	}
	if in.Stop != nil && (len(in.Stop) == 0 || len(in.Stop) > MaxStop) {
		return invalid("input.stop", "stop must hold 1 to %d sequences", MaxStop)
	}
	for i, s := range in.Stop {
		if s == "" || len(s) > MaxStopBytes {
			return invalid(fmt.Sprintf("input.stop[%d]", i), "a stop sequence must be 1 to %d bytes", MaxStopBytes)
		}
	}
	if err := checkFormat(in.ResponseFormat); err != nil {
		return err
	}
	r := in.Reasoning
	if r == nil {
		return nil
	}
	if r.Effort == "" && r.BudgetTokens == 0 {
		return invalid("input.reasoning", "reasoning must give an effort, a budget_tokens, or both")
	}
	if r.Effort != "" && !slices.Contains(Efforts, r.Effort) {
		return invalid("input.reasoning.effort", "effort must be low, medium or high")
	}
	if r.BudgetTokens != 0 && (r.BudgetTokens < MinThinkingBudget || r.BudgetTokens >= in.MaxTokens) {
		return invalid("input.reasoning.budget_tokens", "budget_tokens must be at least %d and below max_tokens (%d)", MinThinkingBudget, in.MaxTokens)
	}
	return nil
}

// refusal is the option of in that rung g cannot honour, and why, or ""
// when it honours them all.
func (g Rung) refusal(in Input) (field, why string) {
	if field, why := g.embeddingRefusal(in); field != "" || in.Embeds() {
		return field, why
	}
	if field, why := g.mediaRefusal(in); field != "" {
		return field, why
	}
	t := g.Takes
	switch {
	case in.Temperature != nil && (g.NoTemperature || g.FixedTemperature && *in.Temperature != 1):
		takes := "no temperature but the default 1"
		if g.NoTemperature {
			takes = "no temperature at all"
		}
		return "input.temperature", "takes " + takes + ", as its model family refuses any other"
	case in.TopP != nil && !t.TopP:
		return "input.top_p", "takes no top_p"
	case in.TopP != nil && g.FixedTemperature && *in.TopP != 1:
		return "input.top_p", "takes no top_p but the default 1, as its model family refuses any other"
	case in.TopP != nil && in.Temperature != nil && t.TemperatureOrTopP:
		return "input.top_p", "takes temperature or top_p, never both"
	case in.Stop != nil && !t.Stop:
		return "input.stop", "takes no stop sequences"
	case in.Seed != nil && !t.Seed:
		return "input.seed", "takes no seed"
	case in.ResponseFormat != nil && !t.ResponseFormat:
		return "input.response_format", "takes no response_format"
	case in.ResponseFormat != nil && t.ForcedTool && in.Reasoning != nil && in.Reasoning.BudgetTokens > 0 && t.Budget:
		return "input.response_format", "takes response_format as a forced tool call, which its model refuses with a thinking budget (reasoning.budget_tokens)"
	}
	return g.reasoningRefusal(in)
}

// reasoningRefusal is refusal's part for the reasoning option: the rung
// needs the form its provider takes, and some sampling is refused while
// a model reasons.
func (g Rung) reasoningRefusal(in Input) (field, why string) {
	r, t := in.Reasoning, g.Takes
	if r == nil {
		return "", ""
	}
	switch {
	case !t.Effort && !t.Budget:
		return "input.reasoning", "takes no reasoning option"
	case t.Effort && r.Effort == "" && !t.Budget:
		return "input.reasoning.effort", "takes reasoning as an effort: give reasoning.effort"
	case t.Budget && r.BudgetTokens == 0 && !t.Effort:
		return "input.reasoning.budget_tokens", "takes reasoning as a thinking budget: give reasoning.budget_tokens"
	case t.Budget && r.BudgetTokens != 0 && r.BudgetTokens >= g.OutputCap(in):
		return "input.reasoning.budget_tokens", fmt.Sprintf("caps the output at %d tokens, which the thinking budget must stay below", g.OutputCap(in))
	case t.ReasoningTopP == 0:
		return "", ""
	case in.Temperature != nil && *in.Temperature != 1:
		return "input.temperature", "takes no temperature but the default 1 while its model reasons"
	case in.TopP != nil && *in.TopP < t.ReasoningTopP:
		return "input.top_p", fmt.Sprintf("takes no top_p below %g while its model reasons", t.ReasoningTopP)
	}
	return "", ""
}
