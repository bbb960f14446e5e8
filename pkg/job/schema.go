package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaBytes bounds a response_format's schema, compacted. The schema
// is sent with every call and kept in the record's input, whose item is at
// most 400 KB; 16 KiB holds schemas of hundreds of properties (OpenAI's
// own limits, 5,000 properties and 10 levels of nesting,
// platform.openai.com/docs/guides/structured-outputs, are about the model,
// not the bytes) while a record stays small.
const MaxSchemaBytes = 16 << 10

// FormatJSONSchema is the one response_format type a job may ask for.
const FormatJSONSchema = "json_schema"

// schemaName is the rule every provider's name for the schema obeys:
// OpenAI's json_schema.name ("a-z, A-Z, 0-9, or contain underscores and
// dashes, with a maximum length of 64",
// platform.openai.com/docs/api-reference/chat/create), Anthropic's tool
// name and Bedrock's toolSpec name (the same characters, 64 the shorter
// bound, docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolSpecification.html).
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ResponseFormat asks the model's answer to be JSON that a JSON Schema
// accepts, in OpenAI's shape, which callers know (docs/providers.md,
// "Structured output"): {"type": "json_schema", "json_schema": {"name",
// "schema", "strict"}}. Only json_schema is taken: {"type":
// "json_object"} has no portable form (Anthropic and Bedrock have no
// JSON mode without a schema), and the schema {"type": "object"} asks the
// same of every provider.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a response_format's schema, named. Strict is sent to
// OpenAI as it is given (its strict mode holds the schema to a subset of
// JSON Schema); Anthropic's and Bedrock's forced tools have no such
// switch. Every answer is validated by the worker whatever Strict says.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// checkFormat holds a response_format to the rules every provider's
// wire allows: a json_schema, named, whose schema is a JSON object of
// "type": "object" (the root every provider takes: OpenAI's strict mode
// and Anthropic's and Bedrock's tool input schemas), at most
// MaxSchemaBytes, that compiles as JSON Schema (draft 2020-12).
func checkFormat(f *ResponseFormat) error {
	if f == nil {
		return nil
	}
	if f.Type != FormatJSONSchema {
		return invalid("input.response_format.type", `response_format.type must be "json_schema" (json_object is not taken: give the schema {"type": "object"})`)
	}
	s := f.JSONSchema
	if s == nil {
		return invalid("input.response_format.json_schema", "response_format.json_schema must give a name and a schema")
	}
	if !schemaName.MatchString(s.Name) {
		return invalid("input.response_format.json_schema.name", "the schema's name must be 1 to 64 letters, digits, underscores or dashes")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, s.Schema); err != nil || c.Len() == 0 || c.Bytes()[0] != '{' {
		return invalid("input.response_format.json_schema.schema", "the schema must be a JSON object")
	}
	if c.Len() > MaxSchemaBytes {
		return invalid("input.response_format.json_schema.schema", "the schema is larger than %d bytes", MaxSchemaBytes)
	}
	var root struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(c.Bytes(), &root) != nil || root.Type != "object" {
		return invalid("input.response_format.json_schema.schema", `the schema's root must be "type": "object"`)
	}
	if _, err := f.Compile(); err != nil {
		return invalid("input.response_format.json_schema.schema", "the schema does not compile as JSON Schema (draft 2020-12): %s", firstLine(err))
	}
	return nil
}

// schemaURL is where a compiled schema says it came from; nothing is
// loaded from it.
const schemaURL = "urn:aijobs:response_format"

// errNoLoading refuses every $ref outside the schema: a schema is the
// caller's, and may not make the API or a worker read a file or a URL.
var errNoLoading = errors.New("a $ref outside the schema is not followed")

type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errNoLoading }

// Compile compiles f's schema (draft 2020-12 unless it names another
// $schema), refusing every reference outside it. The worker compiles it
// once per attempt (Conforms).
func (f *ResponseFormat) Compile() (*jsonschema.Schema, error) {
	if f == nil || f.JSONSchema == nil {
		return nil, errors.New("no json_schema")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(f.JSONSchema.Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// Conforms reports, as an error naming why (nil: it conforms), whether
// output is one JSON value that schema accepts.
func Conforms(schema *jsonschema.Schema, output string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(output))
	if err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("the answer does not conform to the schema: %s", firstLine(err))
	}
	return nil
}

// firstLine is err's message on one line, cut to 200 bytes: the
// library's messages list every cause, one an indented line.
func firstLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
