package job_test

import (
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// TestStoredInputIsNoLargerThanSent: HTML characters are kept literally, so
// a 250 KB body of "<" is not stored as 1.5 MB of "\u003c" (the defaults
// applied, such as max_tokens, add a few bytes).
func TestStoredInputIsNoLargerThanSent(t *testing.T) {
	content := strings.Repeat("<&>", 60_000)
	body := `{"input":{"messages":[{"role":"user","content":"` + content + `"}]}}`
	r, err := job.ParseCreate("t", "k", []byte(body), settings.Defaults().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.InputJSON) > len(body)+32 || !strings.Contains(string(r.InputJSON), "<&>") {
		t.Fatalf("stored input is %d bytes for a %d-byte body", len(r.InputJSON), len(body))
	}
}
