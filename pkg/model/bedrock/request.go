package bedrock

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// prompt is a request in Converse's shape, shared by both operations.
type prompt struct {
	system    []types.SystemContentBlock
	messages  []types.Message
	inference *types.InferenceConfiguration
}

// buildPrompt maps a request onto Converse: system messages become system
// blocks (Converse has no system role), user and assistant messages become
// Converse messages. Consecutive messages of one role become one message
// with one text block each, since Converse requires the roles to alternate
// and an OpenAI-style conversation need not.
func buildPrompt(r model.Request) (prompt, error) {
	var p prompt
	for i, m := range r.Messages {
		var role types.ConversationRole
		switch m.Role {
		case "system":
			p.system = append(p.system, &types.SystemContentBlockMemberText{Value: m.Content})
			continue
		case "user":
			role = types.ConversationRoleUser
		case "assistant":
			role = types.ConversationRoleAssistant
		default:
			return prompt{}, &model.Error{Class: job.InvalidRequest, Detail: "bedrock: unknown message role",
				Err: fmt.Errorf("bedrock: message %d has role %q, want system, user or assistant", i, short(m.Role))}
		}
		block := &types.ContentBlockMemberText{Value: m.Content}
		if n := len(p.messages); n > 0 && p.messages[n-1].Role == role {
			p.messages[n-1].Content = append(p.messages[n-1].Content, block)
			continue
		}
		p.messages = append(p.messages, types.Message{Role: role, Content: []types.ContentBlock{block}})
	}
	if r.MaxTokens > 0 || r.Temperature != nil {
		p.inference = &types.InferenceConfiguration{}
		if r.MaxTokens > 0 {
			p.inference.MaxTokens = aws.Int32(int32(min(r.MaxTokens, 1<<31-1)))
		}
		if r.Temperature != nil {
			p.inference.Temperature = aws.Float32(float32(*r.Temperature))
		}
	}
	return p, nil
}
