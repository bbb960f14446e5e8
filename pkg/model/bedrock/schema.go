package bedrock

import (
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// A job's response_format goes to Converse as a forced tool: toolConfig
// holds one toolSpec whose inputSchema.json is the schema, and toolChoice
// {tool: {name}} makes the model answer with a toolUse block whose input
// is the answer
// (https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html;
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolChoice.html,
// whose tool choice is "Only supported by Anthropic Claude 3 and Amazon
// Nova models": config refuses the option on any other, and on Claude
// with a thinking budget, as Anthropic does).

// answerTool is the forced tool's description, as Anthropic's client
// words it.
const answerTool = "Give the answer to the conversation above as this tool's input."

// toolConfig is f as Converse's toolConfig, nil when the job asks for no
// response_format. The schema was checked to be a JSON object at create.
func toolConfig(f *job.ResponseFormat) *types.ToolConfiguration {
	if f == nil || f.JSONSchema == nil {
		return nil
	}
	s := f.JSONSchema
	var schema map[string]any
	if json.Unmarshal(s.Schema, &schema) != nil {
		return nil
	}
	return &types.ToolConfiguration{
		Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name: aws.String(s.Name), Description: aws.String(answerTool),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}}},
		ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(s.Name)}},
	}
}

// toolUseText is a toolUse block's input as JSON text: a forced tool's
// answer ("" when it has none or cannot be read).
func toolUseText(b *types.ContentBlockMemberToolUse) string {
	if b.Value.Input == nil {
		return ""
	}
	raw, err := b.Value.Input.MarshalSmithyDocument()
	if err != nil {
		return ""
	}
	return string(raw)
}

// toolUseDelta is a stream's toolUse delta, a piece of the input's JSON
// text ("" when the delta is not one).
func toolUseDelta(d types.ContentBlockDelta) string {
	if t, ok := d.(*types.ContentBlockDeltaMemberToolUse); ok {
		return aws.ToString(t.Value.Input)
	}
	return ""
}

// batchToolConfig is f as a batch record's toolConfig: the same body as
// a call's, in Converse's JSON.
type batchToolConfig struct {
	Tools      []batchTool     `json:"tools"`
	ToolChoice batchToolChoice `json:"toolChoice"`
}

type batchTool struct {
	ToolSpec struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	} `json:"toolSpec"`
}

type batchToolChoice struct {
	Tool struct {
		Name string `json:"name"`
	} `json:"tool"`
}

// batchTools is f as a batch record's toolConfig, nil when the job asks
// for no response_format.
func batchTools(f *job.ResponseFormat) *batchToolConfig {
	if f == nil || f.JSONSchema == nil {
		return nil
	}
	var t batchTool
	t.ToolSpec.Name, t.ToolSpec.Description, t.ToolSpec.InputSchema.JSON = f.JSONSchema.Name, answerTool, f.JSONSchema.Schema
	c := &batchToolConfig{Tools: []batchTool{t}}
	c.ToolChoice.Tool.Name = f.JSONSchema.Name
	return c
}

// toolUseJSON is a batch answer's toolUse block (Converse's shape).
type toolUseJSON struct {
	Input json.RawMessage `json:"input"`
}
