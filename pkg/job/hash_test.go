package job_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The canonical form is pinned byte for byte: keys sorted, whitespace
// dropped, numbers as written, unicode and <, >, & kept literally.
func TestCanonicalFixture(t *testing.T) {
	want := readFixture(t, "create.canonical.json")
	sum := sha256.Sum256(want)
	wantHash := "sha256:" + hex.EncodeToString(sum[:])
	for _, name := range []string{"create.json", "create_reordered.json", "create.canonical.json"} {
		t.Run(name, func(t *testing.T) {
			body := readFixture(t, name)
			got, err := job.Canonical(body)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("Canonical:\n got %s\nwant %s", got, want)
			}
			h, err := job.InputHash(body)
			if err != nil || h != wantHash {
				t.Errorf("InputHash = %s, %v; want %s", h, err, wantHash)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{" {\n\t\"a\" : [ 1 , 2 ] }\n", `{"a":[1,2]}`},
		{`{"z":{"y":1,"x":{"w":1,"v":2}}}`, `{"z":{"x":{"v":2,"w":1},"y":1}}`},
		{`{"n":1.0}`, `{"n":1.0}`},
		{`{"n":1e3}`, `{"n":1e3}`},
		{`{"n":-0}`, `{"n":-0}`},
		{`{"n":12345678901234567890123}`, `{"n":12345678901234567890123}`},
		{`{"n":0.1000}`, `{"n":0.1000}`},
		{`{"s":"<a href='x'>&amp;</a>"}`, `{"s":"<a href='x'>&amp;</a>"}`},
		{`{"s":"\u003c\u0026\u003e"}`, `{"s":"<&>"}`},
		{`{"s":"été 日本 🙂"}`, `{"s":"été 日本 🙂"}`},
		{`{"s":"\u00e9"}`, `{"s":"é"}`},
		{`{"s":"a\/b"}`, `{"s":"a/b"}`},
		{`{"é":1,"e":2,"z":3}`, `{"e":2,"z":3,"é":1}`}, // byte order
		{`[3,1,2]`, `[3,1,2]`},                         // arrays keep their order
		{`{"a":null,"b":true,"c":false}`, `{"a":null,"b":true,"c":false}`},
	}
	for _, tt := range tests {
		got, err := job.Canonical([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"a":1,}`, `{"a":1} garbage`, `{"a":1}{"b":2}`, `{} []`, `nope`} {
		if got, err := job.Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", in, got)
		}
		if _, err := job.InputHash([]byte(in)); err == nil {
			t.Errorf("InputHash(%q) accepted", in)
		}
	}
}

func TestInputHashDiffers(t *testing.T) {
	base := `{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"b":[1,2]}}}`
	h0, err := job.InputHash([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	same := []string{
		`{"max_attempts":4,"metadata":{"a":{"b":[1,2]}},"input":{"max_tokens":256,"messages":[{"content":"hi","role":"user"}]}}`,
		"{\n  \"input\": {\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 256},\n  \"max_attempts\": 4,\n  \"metadata\": {\"a\": {\"b\": [1, 2]}}\n}\n",
	}
	for _, s := range same {
		if h, _ := job.InputHash([]byte(s)); h != h0 {
			t.Errorf("InputHash(%s) = %s, want %s (same meaning)", s, h, h0)
		}
	}
	differ := []string{
		`{"input":{"messages":[{"role":"user","content":"hi!"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"b":[1,2]}}}`,
		`{"input":{"messages":[{"role":"system","content":"hi"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"b":[1,2]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":257},"max_attempts":4,"metadata":{"a":{"b":[1,2]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":5,"metadata":{"a":{"b":[1,2]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"b":[2,1]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"b":[1,2,3]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"c":[1,2]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4.0,"metadata":{"a":{"b":[1,2]}}}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4,"metadata":{"a":{"b":[1,2]}},"model":"default"}`,
		`{"input":{"messages":[{"role":"user","content":"hi"}],"max_tokens":256},"max_attempts":4}`,
	}
	for _, s := range differ {
		if h, err := job.InputHash([]byte(s)); err != nil || h == h0 {
			t.Errorf("InputHash(%s) = %s, %v; want a different hash", s, h, err)
		}
	}
	if len(h0) != len("sha256:")+64 || h0[:7] != "sha256:" {
		t.Errorf("InputHash = %q, want sha256:<64 hex>", h0)
	}
}

func TestIsInputHash(t *testing.T) {
	h, err := job.InputHash([]byte(`{"messages":[]}`))
	if err != nil || !job.IsInputHash(h) {
		t.Fatalf("InputHash's own %q (%v) is not an input hash", h, err)
	}
	for _, s := range []string{"", "sha256:", h[:len(h)-1], h + "0", strings.ToUpper(h), "md5:" + h[len("sha256:"):],
		h[:len(h)-1] + "g", h[:len(h)-1] + "#"} {
		if job.IsInputHash(s) {
			t.Errorf("IsInputHash(%q) = true", s)
		}
	}
}
