package openaitest

import (
	"encoding/json"

	"github.com/aijobs/aijobs/pkg/model"
)

// Format is a body's response_format: on chat completions
// {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}
// (https://platform.openai.com/docs/api-reference/chat/create); the
// Responses API's text.format carries the same members flattened
// (https://platform.openai.com/docs/api-reference/responses/create),
// which createResponse folds into this shape.
type Format struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema"`
}

// responsesText is the Responses API's text member.
type responsesText struct {
	Format struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"format"`
}

// format is t as a chat body's Format (nil: none asked).
func (t *responsesText) format() *Format {
	if t == nil || t.Format.Type != "json_schema" {
		return nil
	}
	f := &Format{Type: t.Format.Type}
	f.JSONSchema = &struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	}{t.Format.Name, t.Format.Schema, t.Format.Strict}
	return f
}

// formatRefusal is the 400 to a json_schema response_format without a
// name or a schema, as OpenAI's "Missing required parameter" (nil when
// the body asks for none, or asks well).
func formatRefusal(b Body) map[string]any {
	f := b.ResponseFormat
	if f == nil || f.Type != "json_schema" {
		return nil
	}
	if f.JSONSchema == nil || f.JSONSchema.Name == "" || len(f.JSONSchema.Schema) == 0 {
		return errorBody("Missing required parameter: 'response_format.json_schema'.", "invalid_request_error",
			"response_format.json_schema", "missing_required_parameter")
	}
	return nil
}

// text is the answer's content to id's body b: the echo, or, when b asks
// for a json_schema, a JSON instance of it (model.Example), or with
// Nonconforming set JSON no such schema accepts (model.Nonconforming).
func (s *Server) text(id string, b Body) string {
	f := b.ResponseFormat
	switch {
	case f == nil || f.JSONSchema == nil:
		return echo(id)
	case s.Nonconforming:
		return model.Nonconforming
	}
	return model.Example(f.JSONSchema.Schema)
}
