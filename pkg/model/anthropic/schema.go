package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// A job's response_format goes to the Messages API as a forced tool: one
// tool whose input_schema is the schema, and tool_choice {"type": "tool",
// "name"} so that the model answers with a tool_use block whose input is
// the answer (https://docs.anthropic.com/en/docs/build-with-claude/tool-use,
// "Forcing tool use"; "JSON mode" there is this pattern). Anthropic's
// native structured outputs (output_format) were not chosen: they are a
// beta on some models only
// (https://docs.anthropic.com/en/docs/build-with-claude/structured-outputs),
// while a forced tool is taken by every Claude model aijobs configures,
// and is what Bedrock's Converse takes for Claude too (pkg/model/bedrock).
// A forced tool is refused with extended thinking ("Thinking may not be
// enabled when tool_choice forces tool use", extended thinking guide,
// "Extended thinking with tool use"; run-llama/llama_index#19641): config
// refuses the pair at create (job.Takes.ForcedTool).

// tool is one tool of a Messages request.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// toolChoice names the tool the model must call.
type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// answerTool is the description of the forced tool: the model reads it
// as it reads the prompt.
const answerTool = "Give the answer to the conversation above as this tool's input."

// forceTool sets req's tools and tool_choice from f (nothing when nil).
func forceTool(req *messagesRequest, f *job.ResponseFormat) {
	if f == nil || f.JSONSchema == nil {
		return
	}
	s := f.JSONSchema
	req.Tools = []tool{{Name: s.Name, Description: answerTool, InputSchema: s.Schema}}
	req.ToolChoice = &toolChoice{Type: "tool", Name: s.Name}
}

// contentBlock is one block of a message's content: a text block's text,
// or a tool_use block's input (a forced tool's answer).
type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Input json.RawMessage `json:"input"`
}

// answer is the text of blocks: their text, and the input of each
// tool_use block (with a forced tool, the only block), as JSON text.
func answer(blocks []contentBlock) string {
	var out strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out.WriteString(b.Text)
		case "tool_use":
			out.Write(b.Input)
		}
	}
	return out.String()
}
