package api

import (
	"encoding/json"
	"reflect"

	"github.com/aijobs/aijobs/pkg/job"
)

// The member names of an input's response_format and its json_schema,
// matched exactly as every other object of a create body is (the schema
// itself is the caller's JSON Schema, whose members are its own).
var (
	formatFields     = jsonNames(reflect.TypeFor[job.ResponseFormat]())
	jsonSchemaFields = jsonNames(reflect.TypeFor[job.JSONSchema]())
)

// formatKeys applies exactKeys to a response_format and its json_schema.
func formatKeys(raw json.RawMessage) error {
	if !given(raw) {
		return nil
	}
	if err := exactKeys(raw, "input.response_format.", formatFields); err != nil {
		return err
	}
	var f struct {
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if json.Unmarshal(raw, &f) != nil || !given(f.JSONSchema) {
		return nil
	}
	return exactKeys(f.JSONSchema, "input.response_format.json_schema.", jsonSchemaFields)
}
