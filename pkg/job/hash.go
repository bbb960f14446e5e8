package job

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Canonical re-encodes a JSON document with object keys sorted and
// insignificant whitespace dropped, so that two bodies that mean the same
// hash the same. Numbers keep their literal form.
func Canonical(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	// One document, nothing after it: "{} garbage" is not the same body as "{}".
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("canonical json: data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// InputHash is "sha256:<hex>" of the canonical form of a create body.
func InputHash(body []byte) (string, error) {
	c, err := Canonical(body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// IsInputHash reports whether s has InputHash's form: an operator's
// input hash that does not names no quarantine or failure group (and a '#'
// in it would not even name one key), so it is refused before any read.
func IsInputHash(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// EncodeJSON marshals v without HTML escaping: "<" stays one byte instead
// of six ("\u003c"), so what is stored is no larger than what was sent and
// a record cannot outgrow the store's item limit by encoding alone.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
