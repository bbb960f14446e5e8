package bedrocktest

import (
	"encoding/json"
	"strings"

	"github.com/aijobs/aijobs/pkg/model"
)

// toolConfig is a Converse body's toolConfig: its tools' specs and its
// toolChoice
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolConfiguration.html).
type toolConfig struct {
	Tools []struct {
		ToolSpec *struct {
			Name        string `json:"name"`
			InputSchema struct {
				JSON json.RawMessage `json:"json"`
			} `json:"inputSchema"`
		} `json:"toolSpec"`
	} `json:"tools"`
	ToolChoice struct {
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool"`
	} `json:"toolChoice"`
}

// forced is the name and input schema of the tool c forces
// (toolChoice {tool: {name}}), ok false when it forces none.
func (c *toolConfig) forced() (name string, schema json.RawMessage, ok bool) {
	if c == nil || c.ToolChoice.Tool == nil {
		return "", nil, false
	}
	for _, t := range c.Tools {
		if t.ToolSpec != nil && t.ToolSpec.Name == c.ToolChoice.Tool.Name {
			return t.ToolSpec.Name, t.ToolSpec.InputSchema.JSON, true
		}
	}
	return c.ToolChoice.Tool.Name, nil, true
}

// toolRefusal is why Bedrock refuses a body's toolConfig for model, or
// "": a specific tool choice is "Only supported by Anthropic Claude 3 and
// Amazon Nova models"
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolChoice.html);
// a forced tool naming no tool, or with a schema missing, is malformed;
// Claude refuses a forced tool with extended thinking as Anthropic's API
// does. The wording is our reading, in Bedrock's "Malformed input
// request" shape, but for the thinking refusal, Anthropic's.
func toolRefusal(model string, c *toolConfig, thinks bool) string {
	name, schema, ok := c.forced()
	switch {
	case !ok:
		return ""
	case !strings.Contains(model, "anthropic.claude-") && !strings.Contains(model, "amazon.nova-"):
		return "This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again."
	case len(schema) == 0:
		return "Malformed input request: toolConfig.toolChoice names the tool " + name + " that toolConfig.tools does not hold"
	case thinks && strings.Contains(model, "anthropic.claude"):
		return "The model returned the following errors: Thinking may not be enabled when tool_choice forces tool use."
	}
	return ""
}

// content is the answer's content blocks to a body, and its stop
// reason: an echo's text block, or, for a forced tool, one toolUse block
// whose input is an instance of the schema (model.Example) or, with
// Nonconforming set, JSON no such schema accepts (model.Nonconforming).
func (s *Server) content(c *toolConfig, text string) ([]map[string]any, string) {
	name, schema, ok := c.forced()
	if !ok {
		return []map[string]any{{"text": text}}, "end_turn"
	}
	input := model.Example(schema)
	if s.Nonconforming {
		input = model.Nonconforming
	}
	return []map[string]any{{"toolUse": map[string]any{"toolUseId": "tooluse_" + name, "name": name, "input": json.RawMessage(input)}}}, "tool_use"
}

// toolUse is a Converse answer's toolUse block.
type toolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// streamBlock is the events of a stream's one content block: the text's
// words as text deltas, or a toolUse block started with its id and name
// and its input's JSON text in pieces
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlockStartEvent.html,
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlockDelta.html).
func streamBlock(text string, tu *toolUse) []event {
	var events []event
	if tu == nil {
		for _, word := range strings.SplitAfter(text, " ") {
			events = append(events, event{"contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": word}}})
		}
		return events
	}
	events = append(events, event{"contentBlockStart", map[string]any{"contentBlockIndex": 0,
		"start": map[string]any{"toolUse": map[string]any{"toolUseId": tu.ToolUseID, "name": tu.Name}}}})
	input := string(tu.Input)
	for len(input) > 0 {
		n := min(len(input), 8)
		events = append(events, event{"contentBlockDelta", map[string]any{"contentBlockIndex": 0,
			"delta": map[string]any{"toolUse": map[string]any{"input": input[:n]}}}})
		input = input[n:]
	}
	return events
}
