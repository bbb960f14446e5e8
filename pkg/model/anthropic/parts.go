package anthropic

import (
	"github.com/aijobs/aijobs/pkg/job"
)

// messageOf is m as a Messages API message: its text as a string, as
// every message went before parts; a user message with parts as content
// blocks (docs/providers.md, "Content parts"). An assistant's parts are
// text only (job.CheckInput), sent as its joined text.
func messageOf(m job.Message) message {
	if m.Parts == nil || m.Role != "user" {
		return message{Role: m.Role, Content: m.Text()}
	}
	blocks := make([]any, 0, len(m.Parts))
	for _, p := range m.Parts {
		blocks = append(blocks, block(p))
	}
	return message{Role: m.Role, blocks: blocks}
}

// block is p as a Messages API content block
// (docs.anthropic.com/en/api/messages, content): text; an image block
// with a base64 source (docs.anthropic.com/en/docs/build-with-claude/vision);
// a document block with a base64 PDF source, or a text source for a
// plain text document (docs.anthropic.com/en/docs/build-with-claude/pdf-support,
// docs.anthropic.com/en/docs/build-with-claude/citations, "Plain text
// documents"), titled with the part's name.
func block(p job.ContentPart) map[string]any {
	switch {
	case p.Type == job.PartImage:
		return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": p.MediaType, "data": p.Data}}
	case p.Type == job.PartDocument:
		src := map[string]any{"type": "base64", "media_type": p.MediaType, "data": p.Data}
		if p.MediaType == "text/plain" {
			src = map[string]any{"type": "text", "media_type": p.MediaType, "data": string(p.Bytes())}
		}
		d := map[string]any{"type": "document", "source": src}
		if p.Name != "" {
			d["title"] = p.Name
		}
		return d
	}
	return map[string]any{"type": "text", "text": p.Text}
}

// MarshalJSON sends a message's blocks as its content when it has them,
// else its string content.
func (m message) MarshalJSON() ([]byte, error) {
	if m.blocks != nil {
		return job.EncodeJSON(struct {
			Role    string `json:"role"`
			Content []any  `json:"content"`
		}{m.Role, m.blocks})
	}
	return job.EncodeJSON(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{m.Role, m.Content})
}
