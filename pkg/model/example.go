package model

import (
	"encoding/json"
	"strings"
)

// Nonconforming is an answer no response_format schema accepts: JSON, but
// an array where every schema's root is an object (job.ResponseFormat).
// The fakes answer it when told to, so tests can watch invalid_output.
const Nonconforming = `["not the object the schema asks for"]`

// Example is a small JSON instance of schema, the answer the fakes give a
// job with a response_format: the schema's const or first enum value, or
// a value of its (first) type, with every required property of an object
// and the fewest items an array takes. It reads the keywords a simple
// schema uses, not all of JSON Schema (no $ref, pattern or format): a
// test's schema is written for it.
func Example(schema json.RawMessage) string {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	b, _ := json.Marshal(example(s, 0))
	return string(b)
}

// example is example's value of s, depth levels down.
func example(s map[string]any, depth int) any {
	if depth > 16 {
		return nil // deeper than any test's schema: a recursive one
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if a, ok := alts[0].(map[string]any); ok {
				return example(a, depth+1)
			}
		}
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "object":
		return exampleObject(s, depth)
	case "array":
		n, _ := s["minItems"].(float64)
		items, _ := s["items"].(map[string]any)
		out := []any{}
		for range int(n) {
			out = append(out, example(items, depth+1))
		}
		return out
	case "string":
		n, _ := s["minLength"].(float64)
		return strings.Repeat("x", max(int(n), 1))
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 0
	case "boolean":
		return true
	}
	return nil
}

// exampleObject is example's object: every required property.
func exampleObject(s map[string]any, depth int) any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	for _, r := range req {
		name, _ := r.(string)
		p, _ := props[name].(map[string]any)
		out[name] = example(p, depth+1)
	}
	return out
}
