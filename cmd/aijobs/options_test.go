package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/client/clienttest"
)

// The option flags set the input's sampling and reasoning options, on a
// --prompt input and over a body's input alike, leaving the rest of it as
// it was; the body sent is the contract's (clienttest checks it against
// docs/openapi.yaml).
func TestSubmitOptionFlagsSetTheInputsOptions(t *testing.T) {
	srv := clienttest.Start(t)
	env := map[string]string{"AIJOBS_ENDPOINT": srv.URL, "AIJOBS_TOKEN": "tenant-a"}
	for _, tt := range []struct {
		name  string
		in    invocation
		input string
	}{
		{"prompt", invocation{env: env, args: args("submit", "--key", "p", "--prompt", "hi", "--max-tokens", "4096",
			"--top-p", "0.9", "--stop", "END", "--stop", "###", "--seed", "42", "--reasoning-effort", "low", "--thinking-budget", "2048")},
			`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4096,"top_p":0.9,"stop":["END","###"],"seed":42,"reasoning":{"effort":"low","budget_tokens":2048}}`},
		{"body", invocation{env: env, args: args("submit", "--key", "b", "--top-p", "1", "--reasoning-effort", "high"),
			stdin: `{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":2048,"temperature":1,"stop":["x"],"reasoning":{"budget_tokens":1024}}}`},
			`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2048,"temperature":1,"top_p":1,"stop":["x"],"reasoning":{"effort":"high","budget_tokens":1024}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := view(t, tt.in.run(t))
			rec, err := srv.Store.Get(context.Background(), v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(rec.Input) != tt.input {
				t.Fatalf("input recorded\n %s\nwant\n %s", rec.Input, tt.input)
			}
		})
	}
}

// The flags' own bounds are usage errors, found before anything is sent.
func TestSubmitOptionFlagsRefusedBeforeSending(t *testing.T) {
	const ep = "--endpoint=http://127.0.0.1:1"
	for _, tt := range []struct {
		name   string
		in     invocation
		stderr string
	}{
		{"top-p above 1", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--top-p", "1.5")}, "--top-p"},
		{"five stops", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--stop", "a", "--stop", "b", "--stop", "c", "--stop", "d", "--stop", "e")}, "at most 4"},
		{"an unknown effort", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--reasoning-effort", "max")}, "--reasoning-effort"},
		{"a body input with an unknown member", invocation{args: args("submit", ep, "--key", "k", "--seed", "1"),
			stdin: `{"input":{"messages":[{"role":"user","content":"hi"}],"top_k":5}}`}, "not a model input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in.run(t)
			if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.stderr)
			}
		})
	}
}

// --schema sets input.response_format from a JSON Schema file, named
// after it and strict; a file that is not a JSON object is a usage error.
func TestSubmitSchemaFlagSetsTheResponseFormat(t *testing.T) {
	srv := clienttest.Start(t)
	env := map[string]string{"AIJOBS_ENDPOINT": srv.URL, "AIJOBS_TOKEN": "tenant-a"}
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.schema.json")
	if err := os.WriteFile(path, []byte(`{"type": "object", "required": ["title"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := view(t, invocation{env: env, args: args("submit", "--key", "s", "--prompt", "hi", "--schema", path)}.run(t))
	rec, err := srv.Store.Get(context.Background(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1024,"response_format":{"type":"json_schema","json_schema":{"name":"summary","schema":{"type":"object","required":["title"]},"strict":true}}}`
	if string(rec.Input) != want {
		t.Fatalf("input recorded\n %s\nwant\n %s", rec.Input, want)
	}
	bad := filepath.Join(dir, "list.json")
	_ = os.WriteFile(bad, []byte(`["not", "a", "schema"]`), 0o600)
	if r := (invocation{args: args("submit", "--endpoint=http://127.0.0.1:1", "--key", "k", "--prompt", "hi", "--schema", bad)}).run(t); r.code != 2 || !strings.Contains(r.stderr, "--schema") {
		t.Fatalf("a schema that is not an object: exit %d, stderr %q", r.code, r.stderr)
	}
}
