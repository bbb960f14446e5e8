package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// notName is what a schema's name may not hold (job's rule: letters,
// digits, _ and -).
var notName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// schemaFormat is --schema's response_format: the JSON Schema in the file
// at path, named after the file ("summary.schema.json": "summary"),
// strict. The server checks the schema (docs/providers.md, "Structured
// output"); here only that the file is a JSON object.
func schemaFormat(path string) (*job.ResponseFormat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("submit: --schema: %v", err)
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) || len(b) == 0 || b[0] != '{' {
		return nil, usageErrorf("submit: --schema %s is not a JSON object", path)
	}
	name, _, _ := strings.Cut(filepath.Base(path), ".")
	if name = notName.ReplaceAllString(name, "_"); name == "" {
		name = "answer"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return &job.ResponseFormat{Type: job.FormatJSONSchema, JSONSchema: &job.JSONSchema{Name: name, Schema: b, Strict: true}}, nil
}
