package anthropictest

import (
	"encoding/json"
	"strings"

	"github.com/aijobs/aijobs/pkg/model"
)

// Tool is one tool of a Messages body; ToolChoice its tool_choice
// (https://docs.anthropic.com/en/docs/build-with-claude/tool-use).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolChoice is a body's tool_choice: "auto", "any", "tool" (with the
// tool's name) or "none".
type ToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// forcedTool is the tool p forces (tool_choice {"type": "tool"}), or nil.
func forcedTool(p Params) *Tool {
	if p.ToolChoice == nil || p.ToolChoice.Type != "tool" {
		return nil
	}
	for i := range p.Tools {
		if p.Tools[i].Name == p.ToolChoice.Name {
			return &p.Tools[i]
		}
	}
	return nil
}

// toolRefusal is why the API refuses p's tools, or "": a forced tool
// choice with extended thinking ("Thinking may not be enabled when
// tool_choice forces tool use", extended thinking guide, "Extended
// thinking with tool use"; the words as run-llama/llama_index#19641
// reports them), a tool choice naming no tool of the body (our reading),
// and a tool without an input_schema.
func toolRefusal(p Params) string {
	forces := p.ToolChoice != nil && (p.ToolChoice.Type == "tool" || p.ToolChoice.Type == "any")
	switch {
	case forces && p.Thinking != nil && p.Thinking.Type == "enabled":
		return "Thinking may not be enabled when tool_choice forces tool use."
	case p.ToolChoice != nil && p.ToolChoice.Type == "tool" && forcedTool(p) == nil:
		return "tool_choice.name: no tool of this name in tools"
	}
	for _, t := range p.Tools {
		if len(t.InputSchema) == 0 {
			return "tools." + t.Name + ".input_schema: Field required"
		}
	}
	return ""
}

// content is the answer's content to p, its stop reason and how many
// output tokens it counts: an echo of id as a text block, or, when p
// forces a tool, one tool_use block whose input is an instance of the
// tool's schema (model.Example) or, with Nonconforming set, JSON no such
// schema accepts (model.Nonconforming). With a forced tool the model
// writes no text before the tool_use block ("Forcing tool use").
func (s *Server) content(p Params, id string) ([]map[string]any, string, int) {
	t := forcedTool(p)
	if t == nil {
		text := "echo " + id
		return []map[string]any{{"type": "text", "text": text}}, "end_turn", len(strings.Fields(text))
	}
	input := model.Example(t.InputSchema)
	if s.Nonconforming {
		input = model.Nonconforming
	}
	return []map[string]any{{"type": "tool_use", "id": "toolu_" + id, "name": t.Name, "input": json.RawMessage(input)}},
		"tool_use", len(strings.Fields(input))
}

// streamBlock is the events of m's one content block: a text block's
// text_delta pieces, or a tool_use block's input as input_json_delta
// pieces, started with an empty input ("Streaming Messages", "Input JSON
// delta", https://docs.anthropic.com/en/docs/build-with-claude/streaming).
func streamBlock(m map[string]any) []map[string]any {
	b := m["content"].([]map[string]any)[0]
	if b["type"] != "tool_use" {
		events := []map[string]any{{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}}
		for _, word := range strings.SplitAfter(b["text"].(string), " ") {
			events = append(events, map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}})
		}
		return events
	}
	events := []map[string]any{{"type": "content_block_start", "index": 0, "content_block": map[string]any{
		"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}}}
	input := string(b["input"].(json.RawMessage))
	for len(input) > 0 {
		n := min(len(input), 8)
		events = append(events, map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": input[:n]}})
		input = input[n:]
	}
	return events
}
