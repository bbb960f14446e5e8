package openai

import (
	"github.com/aijobs/aijobs/pkg/job"
)

// chatMessageOf is m as a message of chat completions (responses false)
// or of the Responses API's input: its text as a string, as every message
// went before parts; a user message with parts as the API's content array
// (docs/providers.md, "Content parts"). System and assistant messages
// carry text only (job.CheckInput), sent as their joined text: the
// Responses API would take an assistant's text only as output_text.
func chatMessageOf(m job.Message, responses bool) chatMessage {
	if m.Parts == nil || m.Role != "user" {
		return chatMessage{Role: m.Role, Content: m.Text()}
	}
	parts := make([]any, 0, len(m.Parts))
	for _, p := range m.Parts {
		if responses {
			parts = append(parts, responsesPart(p))
		} else {
			parts = append(parts, chatPart(p))
		}
	}
	return chatMessage{Role: m.Role, parts: parts}
}

// dataURL is p's bytes as the data URL OpenAI takes for an inline image
// or file ("data:image/jpeg;base64,...",
// platform.openai.com/docs/guides/images-vision; "data:application/pdf;base64,...",
// platform.openai.com/docs/guides/pdf-files).
func dataURL(p job.ContentPart) string { return "data:" + p.MediaType + ";base64," + p.Data }

// fileName is a PDF's filename: the part's name, or one the API takes
// (the file part names its file).
func fileName(p job.ContentPart) string {
	if p.Name != "" {
		return p.Name
	}
	return "document.pdf"
}

// chatPart is p as a chat completions content part
// (platform.openai.com/docs/api-reference/chat/create, messages[].content
// array): {"type":"text"}, {"type":"image_url","image_url":{"url"}} and
// {"type":"file","file":{"filename","file_data"}}. File inputs take PDFs
// only; a plain text document goes as its text.
func chatPart(p job.ContentPart) map[string]any {
	switch {
	case p.Type == job.PartImage:
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL(p)}}
	case p.Type == job.PartDocument && p.MediaType == "application/pdf":
		return map[string]any{"type": "file", "file": map[string]any{"filename": fileName(p), "file_data": dataURL(p)}}
	}
	return map[string]any{"type": "text", "text": partText(p)}
}

// responsesPart is p as a Responses API input content part
// (platform.openai.com/docs/api-reference/responses/create, input
// message content): input_text, input_image (image_url a data URL) and
// input_file (filename, file_data).
func responsesPart(p job.ContentPart) map[string]any {
	switch {
	case p.Type == job.PartImage:
		return map[string]any{"type": "input_image", "image_url": dataURL(p)}
	case p.Type == job.PartDocument && p.MediaType == "application/pdf":
		return map[string]any{"type": "input_file", "filename": fileName(p), "file_data": dataURL(p)}
	}
	return map[string]any{"type": "input_text", "text": partText(p)}
}

// partText is a text part's text, or a plain text document's.
func partText(p job.ContentPart) string {
	if p.Type == job.PartText {
		return p.Text
	}
	return string(p.Bytes())
}

// MarshalJSON sends a message's parts as its content array when it has
// them, else its string content.
func (m chatMessage) MarshalJSON() ([]byte, error) {
	if m.parts != nil {
		return job.EncodeJSON(struct {
			Role    string `json:"role"`
			Content []any  `json:"content"`
		}{m.Role, m.parts})
	}
	return job.EncodeJSON(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{m.Role, m.Content})
}
