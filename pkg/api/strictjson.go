package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// strictDecode decodes one JSON value, refusing unknown fields, wrong types
// and trailing data, and names the offending field.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			f := jsonPath(te.Field)
			return invalid(f, "%s has the wrong type (want %s)", f, jsonKind(te.Type))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalid(f, "unknown field %q", Clip(f, 64))
		default:
			return invalid("", "the body is not valid JSON")
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("", "the body holds data after the JSON object")
	}
	return nil
}

// jsonPath is a type error's field path as the caller wrote it:
// encoding/json names an embedded struct's member through the struct's
// Go name ("Options.top_p" for job.Input's top_p). Every member a body
// may hold is lower case, so a capitalised segment is such a Go name.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p == "" || p[0] < 'A' || p[0] > 'Z' {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// duplicateKey finds an object, at any depth, that names a member twice.
// JSON parsers disagree on which one counts (Go takes the last, others the
// first), so a proxy in front of the API could read another request than
// the one hashed and run. Malformed JSON is left to strictDecode.
func duplicateKey(b []byte) (string, bool) {
	type frame struct {
		keys  map[string]bool // nil for an array
		atKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].atKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, atKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if f := stack[len(stack)-1]; f.keys != nil && f.atKey {
				if f.keys[v] {
					return v, true
				}
				f.keys[v], f.atKey = true, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// exactKeys refuses a member of the JSON object b whose name is not, byte
// for byte, one of allowed, naming it prefix+name. Anything that is not an
// object is left to strictDecode, which names the type error.
func exactKeys(b []byte, prefix string, allowed []string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		if !slices.Contains(allowed, k) {
			return invalid(prefix+k, "unknown field %q", Clip(prefix+k, 64))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// number returns the literal of an optional JSON number member; absent and
// null are "not given". A string, even one that holds digits, is refused.
func number(field string, raw json.RawMessage) (string, bool, error) {
	if raw == nil {
		return "", false, nil
	}
	s := string(bytes.TrimSpace(raw))
	switch {
	case s == "null":
		return "", false, nil
	case s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9'):
		return "", false, invalid(field, "%s must be a JSON number", field)
	}
	return s, true, nil
}

// jsonKind names a Go kind the way a JSON caller knows it, so no Go type
// name reaches a response.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

// boundedInt reads an optional whole-number member: def when it is not
// given, else a value from lo to hi.
func boundedInt(field string, raw json.RawMessage, def, lo, hi int) (int, error) {
	s, ok, err := number(field, raw)
	if err != nil {
		return 0, err
	}
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, invalid(field, "%s must be a whole number between %d and %d", field, lo, hi)
	}
	return v, nil
}

func dotted(f string) string {
	if f == "" {
		return ""
	}
	return "." + f
}
