package bedrock

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// prompt is a request in Converse's shape, shared by both operations.
type prompt struct {
	system    []types.SystemContentBlock
	messages  []types.Message
	inference *types.InferenceConfiguration
	// additional are the model's own fields Converse passes through
	// (additionalModelRequestFields): Claude's extended thinking.
	additional map[string]any
	// tools carry the job's response_format (schema.go).
	tools *types.ToolConfiguration
}

// buildPrompt maps a request onto Converse: system messages become system
// blocks (Converse has no system role), user and assistant messages become
// Converse messages. Consecutive messages of one role become one message
// with one text block each, since Converse requires the roles to alternate
// and an OpenAI-style conversation need not.
func buildPrompt(r model.Request) (prompt, error) {
	var p prompt
	if o := r.Options; o.Seed != nil || o.Reasoning != nil && o.Reasoning.BudgetTokens == 0 {
		// Config refuses such a job at create; one accepted when its
		// route was another is refused here, unsent, rather than run
		// without what it asked for.
		return prompt{}, model.Errorf(job.InvalidRequest, "bedrock: Converse takes no seed and no reasoning effort")
	}
	if r.Options.ResponseFormat != nil && r.Options.Reasoning != nil { // schema.go: a forced tool refuses thinking
		return prompt{}, model.Errorf(job.InvalidRequest, "bedrock: a response_format is a forced tool, which Claude refuses with thinking")
	}
	for i, m := range r.Messages {
		var role types.ConversationRole
		switch m.Role {
		case "system":
			p.system = append(p.system, &types.SystemContentBlockMemberText{Value: m.Text()})
			continue
		case "user":
			role = types.ConversationRoleUser
		case "assistant":
			role = types.ConversationRoleAssistant
		default:
			return prompt{}, &model.Error{Class: job.InvalidRequest, Detail: "bedrock: unknown message role",
				Err: fmt.Errorf("bedrock: message %d has role %q, want system, user or assistant", i, short(m.Role))}
		}
		blocks := contentBlocks(m)
		if n := len(p.messages); n > 0 && p.messages[n-1].Role == role {
			p.messages[n-1].Content = append(p.messages[n-1].Content, blocks...)
			continue
		}
		p.messages = append(p.messages, types.Message{Role: role, Content: blocks})
	}
	nameDocuments(p.messages)
	p.inference = inference(r)
	p.additional = additional(r.Options)
	p.tools = toolConfig(r.Options.ResponseFormat)
	return p, nil
}

// inference is r's inferenceConfig, nil when r sets none of it: maxTokens,
// temperature, and the job.Options Converse takes there, topP and
// stopSequences (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InferenceConfiguration.html).
func inference(r model.Request) *types.InferenceConfiguration {
	o := r.Options
	if r.MaxTokens <= 0 && r.Temperature == nil && o.TopP == nil && o.Stop == nil {
		return nil
	}
	c := &types.InferenceConfiguration{StopSequences: o.Stop}
	if r.MaxTokens > 0 {
		c.MaxTokens = aws.Int32(int32(min(r.MaxTokens, 1<<31-1)))
	}
	if r.Temperature != nil {
		c.Temperature = aws.Float32(float32(*r.Temperature))
	}
	if o.TopP != nil {
		c.TopP = aws.Float32(float32(*o.TopP))
	}
	return c
}

// additional is the reasoning option as additionalModelRequestFields: a
// thinking budget is Claude's extended thinking, in the Messages API's
// own shape (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html);
// config lets only Claude rungs that take it reach here with one.
func additional(o job.Options) map[string]any {
	if o.Reasoning == nil || o.Reasoning.BudgetTokens <= 0 {
		return nil
	}
	return map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": o.Reasoning.BudgetTokens}}
}

// additionalDocument is p's additional fields as the SDK sends them.
func (p prompt) additionalDocument() document.Interface {
	if p.additional == nil {
		return nil
	}
	return document.NewLazyDocument(p.additional)
}
