package client_test

import (
	"encoding/json"
	"testing"

	"github.com/aijobs/aijobs/pkg/client"
)

// UserPromptWith carries a response_format in the contract's shape.
func TestUserPromptWithAResponseFormat(t *testing.T) {
	in := client.UserPromptWith("hi", 0, client.Options{ResponseFormat: &client.ResponseFormat{Type: "json_schema",
		JSONSchema: &client.JSONSchema{Name: "p", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}}})
	want := `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object"},"strict":true}}}`
	if string(in) != want {
		t.Fatalf("input %s, want %s", in, want)
	}
}
