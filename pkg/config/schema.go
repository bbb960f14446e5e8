package config

import (
	"regexp"
	"strings"
)

// claude matches every Claude model id, bare (Anthropic's API) or as
// Bedrock names it (anthropic.claude-..., us.anthropic.claude-...).
var claude = regexp.MustCompile(`(^|\.)claude-`)

// noStructuredOutput matches the OpenAI models older than Structured
// Outputs, which answer response_format json_schema with a 400: it came
// with gpt-4o-2024-08-06 and gpt-4o-mini-2024-07-18, and every later
// family takes it (platform.openai.com/docs/guides/structured-outputs,
// "Supported models"; PipedreamHQ/pipedream#13707 quotes the list).
// o1-mini and o1-preview never took it.
var noStructuredOutput = regexp.MustCompile(`^(gpt-3\.5|gpt-4($|-)|gpt-4o-2024-05-13|o1-mini|o1-preview)`)

// formatTakes says whether a rung of kind's model takes response_format,
// and whether it carries it as a forced tool call (docs/providers.md,
// "Structured output"):
//   - openai: response_format json_schema (chat, batch lines) or
//     text.format (Responses), on the models noStructuredOutput leaves;
//   - anthropic: a forced tool whose input_schema is the schema, on every
//     Claude model (docs.anthropic.com/en/docs/build-with-claude/tool-use,
//     "Forcing tool use");
//   - bedrock: Converse's toolConfig with toolChoice {tool}, which Bedrock
//     documents for "Anthropic Claude 3 and Amazon Nova models" only
//     (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolChoice.html),
//     read here as Claude 3 and later;
//   - fake: the local fake answers the schema's example.
func formatTakes(kind, model string) (takes, forced bool) {
	switch kind {
	case KindFake:
		return true, false
	case KindOpenAI:
		return !noStructuredOutput.MatchString(model), false
	case KindAnthropic:
		return true, true
	case KindBedrock:
		ok := strings.Contains(model, "amazon.nova-") ||
			claude.MatchString(model) && !strings.Contains(model, "claude-v2") && !strings.Contains(model, "claude-instant")
		return ok, ok
	}
	return false, false
}
