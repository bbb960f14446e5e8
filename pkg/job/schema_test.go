package job_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// format is a json_schema response_format named name over schema.
func format(name, schema string) *job.ResponseFormat {
	return &job.ResponseFormat{Type: job.FormatJSONSchema, JSONSchema: &job.JSONSchema{Name: name, Schema: json.RawMessage(schema)}}
}

const personSchema = `{"type": "object", "properties": {"name": {"type": "string", "minLength": 2}, "age": {"type": "integer", "minimum": 0}},
	"required": ["name", "age"], "additionalProperties": false}`

// A response_format is checked at create: a json_schema only, named as
// every provider takes a name, a JSON object of root type object within
// MaxSchemaBytes that compiles; each refusal names the member at fault.
func TestCheckInputHoldsTheResponseFormatToItsRules(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 2048, MaxMaxTokens: 32_768}
	big := `{"type": "object", "description": "` + strings.Repeat("x", job.MaxSchemaBytes) + `"}`
	for _, tt := range []struct {
		name  string
		f     *job.ResponseFormat
		field string // "" means accepted
	}{
		{"a schema", format("person", personSchema), ""},
		{"the smallest schema", format("any_object-1", `{"type": "object"}`), ""},
		{"a $defs reference inside the schema", format("p", `{"type": "object", "$defs": {"n": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}`), ""},
		{"json_object", &job.ResponseFormat{Type: "json_object"}, "input.response_format.type"},
		{"text", &job.ResponseFormat{Type: "text"}, "input.response_format.type"},
		{"no json_schema", &job.ResponseFormat{Type: job.FormatJSONSchema}, "input.response_format.json_schema"},
		{"no name", format("", personSchema), "input.response_format.json_schema.name"},
		{"a name with a space", format("a b", personSchema), "input.response_format.json_schema.name"},
		{"a name of 65", format(strings.Repeat("n", 65), personSchema), "input.response_format.json_schema.name"},
		{"no schema", format("p", ``), "input.response_format.json_schema.schema"},
		{"an array schema", format("p", `{"type": "array"}`), "input.response_format.json_schema.schema"},
		{"a schema that is not an object", format("p", `true`), "input.response_format.json_schema.schema"},
		{"a schema too large", format("p", big), "input.response_format.json_schema.schema"},
		{"a schema that does not compile", format("p", `{"type": "object", "properties": {"a": {"type": "strin"}}}`), "input.response_format.json_schema.schema"},
		{"a minimum that is not a number", format("p", `{"type": "object", "minProperties": "two"}`), "input.response_format.json_schema.schema"},
		{"a reference outside the schema", format("p", `{"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}`), "input.response_format.json_schema.schema"},
		{"a reference to the web", format("p", `{"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}`), "input.response_format.json_schema.schema"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, Options: job.Options{ResponseFormat: tt.f}}
			err := l.CheckInput(&in)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckInput: %v", err)
				}
				return
			}
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeInvalidRequest || e.Field != tt.field {
				t.Fatalf("CheckInput = %v, want invalid_request on %s", err, tt.field)
			}
		})
	}
}

// The size bound is on the compacted schema: whitespace a caller's
// pretty-printer adds does not count against it.
func TestTheSchemaBoundIsOnItsCompactForm(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 2048, MaxMaxTokens: 32_768}
	padded := `{"type":` + strings.Repeat(" ", job.MaxSchemaBytes) + `"object"}`
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, Options: job.Options{ResponseFormat: format("p", padded)}}
	if err := l.CheckInput(&in); err != nil {
		t.Fatalf("a small schema padded with whitespace: %v", err)
	}
}

// Conforms accepts exactly the JSON the schema accepts.
func TestConforms(t *testing.T) {
	s, err := format("person", personSchema).Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		answer string
		ok     bool
	}{
		{`{"name": "Ada", "age": 36}`, true},
		{` {"age": 0, "name": "Al"} `, true},
		{`{"name": "Ada"}`, false},
		{`{"name": "Ada", "age": -1}`, false},
		{`{"name": "Ada", "age": 36, "extra": 1}`, false},
		{`{"name": "Ada", "age": "36"}`, false},
		{`["Ada", 36]`, false},
		{`Sure! {"name": "Ada", "age": 36}`, false},
		{`{"name": "Ada", "age": 36} trailing`, false},
		{``, false},
	} {
		err := job.Conforms(s, tt.answer)
		if (err == nil) != tt.ok {
			t.Errorf("Conforms(%q) = %v, want ok %v", tt.answer, err, tt.ok)
		}
	}
}

// A rung that cannot carry a response_format refuses it, and a rung that
// carries it as a forced tool refuses it with a thinking budget (Claude
// refuses the pair); the budget alone, or the format alone, is taken.
func TestCheckOptionsRefusesAResponseFormatARungCannotHonour(t *testing.T) {
	claude := job.Takes{TopP: true, Stop: true, Budget: true, ResponseFormat: true, ForcedTool: true, ReasoningTopP: 0.95}
	openai := job.Takes{TopP: true, Effort: true, ResponseFormat: true, ReasoningTopP: 1}
	old := job.Takes{TopP: true, Stop: true, Seed: true}
	budget := &job.Reasoning{Effort: "low", BudgetTokens: 2000}
	f := format("person", personSchema)
	for _, tt := range []struct {
		name  string
		t     job.Takes
		o     job.Options
		field string
	}{
		{"claude takes a format", claude, job.Options{ResponseFormat: f}, ""},
		{"claude takes a budget", claude, job.Options{Reasoning: budget}, ""},
		{"claude refuses both", claude, job.Options{ResponseFormat: f, Reasoning: budget}, "input.response_format"},
		{"openai takes both", openai, job.Options{ResponseFormat: f, Reasoning: budget}, ""},
		{"an older model takes none", old, job.Options{ResponseFormat: f}, "input.response_format"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := job.Rung{Provider: "p", Model: "m", Timeout: time.Minute, Takes: tt.t}
			in := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, MaxTokens: 4096, Options: tt.o}
			err := job.Route{Rungs: []job.Rung{g}}.CheckOptions("route", in, nil)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckOptions: %v", err)
				}
				return
			}
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeUnsupported || e.Field != tt.field || !strings.Contains(e.Message, "rung 0 (p/m)") {
				t.Fatalf("CheckOptions = %v, want unsupported on %s naming rung 0", err, tt.field)
			}
		})
	}
}

// invalid_output is retryable (a new generation may conform), ends a job
// failed, and is not the input's fault: never quarantined.
func TestInvalidOutputIsRetriedAndNotQuarantined(t *testing.T) {
	c := job.InvalidOutput
	if !c.Valid() || !c.Retryable() || c.Deterministic() || c.FinalState() != job.Failed {
		t.Fatalf("invalid_output: valid %v retryable %v deterministic %v final %v", c.Valid(), c.Retryable(), c.Deterministic(), c.FinalState())
	}
}
