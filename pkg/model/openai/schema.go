package openai

import (
	"encoding/json"

	"github.com/aijobs/aijobs/pkg/job"
)

// chatFormat is a job's response_format as chat completions (and so each
// batch line) take it: the same shape, {"type": "json_schema",
// "json_schema": {"name", "schema", "strict"}}
// (https://platform.openai.com/docs/api-reference/chat/create,
// response_format; https://platform.openai.com/docs/guides/structured-outputs).
// The answer is the message's content, JSON text; the worker validates it.
func chatFormat(f *job.ResponseFormat) *job.ResponseFormat {
	if f == nil || f.JSONSchema == nil {
		return nil
	}
	return f
}

// textConfig is the Responses API's text configuration: its format is the
// json_schema flattened, {"type": "json_schema", "name", "schema",
// "strict"} (https://platform.openai.com/docs/api-reference/responses/create,
// text.format; the structured outputs guide shows both APIs).
type textConfig struct {
	Format textFormat `json:"format"`
}

type textFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// responsesText is a job's response_format as the Responses API takes it
// (textConfig), nil when the job asks for none.
func responsesText(f *job.ResponseFormat) *textConfig {
	if f == nil || f.JSONSchema == nil {
		return nil
	}
	s := f.JSONSchema
	return &textConfig{Format: textFormat{Type: job.FormatJSONSchema, Name: s.Name, Schema: s.Schema, Strict: s.Strict}}
}
