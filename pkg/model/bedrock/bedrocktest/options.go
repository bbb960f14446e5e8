package bedrocktest

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// How Bedrock refuses a Converse body's options, on a call and in a
// batch record alike (docs/providers.md, "Sampling and reasoning
// options"): each rule cites where it is written down.

// claude4 names the Claude 4.x models as Bedrock ids them.
var claude4 = regexp.MustCompile(`(^|\.)claude-(opus|sonnet|haiku)-4($|[-@:])`)

// thinkingLast names the Claude 4.x models from 4.7 on.
var thinkingLast = regexp.MustCompile(`(^|\.)claude-(opus|sonnet|haiku)-4-([7-9]|[1-9][0-9])($|[-@:])`)

// optionsBody is the part of a Converse body the rules read.
type optionsBody struct {
	InferenceConfig              json.RawMessage `json:"inferenceConfig"`
	AdditionalModelRequestFields map[string]json.RawMessage
	ToolConfig                   *toolConfig `json:"toolConfig"`
}

// inferenceConfig is Converse's InferenceConfiguration: these four
// members and no other
// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InferenceConfiguration.html).
type inferenceConfig struct {
	MaxTokens     int      `json:"maxTokens"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"topP"`
	StopSequences []string `json:"stopSequences"`
}

// refusal is why Bedrock refuses a Converse body for model with a
// ValidationException, or "".
//
//   - inferenceConfig holds only its four members (a seed has no place
//     in Converse): the SDK's serializer could send no other, a batch
//     record could.
//   - additionalModelRequestFields go to the model as they are: any model
//     but Claude refuses a thinking member, extended thinking being
//     Claude's (the user guide above; the wording here is our reading,
//     in the shape of Bedrock's "Malformed input request" answers), and
//     Claude's rules are the Messages API's (claudeRefusal). The wording
//     of the thinking refusals is our reading of the guide, but for the
//     budget's and the temperature's, as Anthropic answers them.
func refusal(model string, raw json.RawMessage) string {
	var b optionsBody
	if json.Unmarshal(raw, &b) != nil {
		return "Malformed input request"
	}
	if msg := blockRefusal(raw); msg != "" {
		return msg
	}
	var ic inferenceConfig
	if len(b.InferenceConfig) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b.InferenceConfig))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ic); err != nil {
			return "Malformed input request: " + err.Error()
		}
	}
	thinking, thinks := b.AdditionalModelRequestFields["thinking"]
	if msg := toolRefusal(model, b.ToolConfig, thinks); msg != "" {
		return msg
	}
	if thinks && !strings.Contains(model, "anthropic.claude") {
		return "The model returned the following errors: Malformed input request: extraneous key [thinking] is not permitted"
	}
	if !strings.Contains(model, "anthropic.claude") {
		return ""
	}
	return claudeRefusal(model, ic, thinking)
}

// claudeRefusal is Claude's refusal on Bedrock, the Messages API's rules:
// Claude 4.x takes temperature or topP, not both (as on Anthropic's API,
// issue K), and an extended thinking budget only on Claude 3.7 Sonnet and
// the 4.x models before 4.7, at least 1024 and below maxTokens, with no
// temperature but 1 and no topP below 0.95
// (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html).
func claudeRefusal(model string, ic inferenceConfig, thinking json.RawMessage) string {
	const prefix = "The model returned the following errors: "
	if claude4.MatchString(model) && ic.Temperature != nil && ic.TopP != nil {
		return prefix + "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
	}
	if thinking == nil {
		return ""
	}
	var t struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	}
	switch {
	case json.Unmarshal(thinking, &t) != nil || t.Type != "enabled":
		return prefix + "thinking: malformed"
	case !strings.Contains(model, "claude-3-7-sonnet") && !claude4.MatchString(model) || thinkingLast.MatchString(model):
		return prefix + "thinking: extended thinking with budget_tokens is not supported for this model"
	case t.BudgetTokens < 1024 || t.BudgetTokens >= ic.MaxTokens:
		return prefix + "thinking.budget_tokens: must be >= 1024 and < max_tokens"
	case ic.Temperature != nil && *ic.Temperature != 1:
		return prefix + "`temperature` may only be set to 1 when thinking is enabled."
	case ic.TopP != nil && *ic.TopP < 0.95:
		return prefix + "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled."
	}
	return ""
}
