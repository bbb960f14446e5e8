package job_test

import (
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestStoredInputIsNoLargerThanSent: HTML characters are kept literally, so
// a 250 KB input of "<" is not stored as 1.5 MB of "\u003c" (pkg/api's
// create body tests prove the same through the decoder).
func TestStoredInputIsNoLargerThanSent(t *testing.T) {
	content := strings.Repeat("<&>", 60_000)
	b, err := job.EncodeJSON(job.Input{Messages: []job.Message{{Role: "user", Content: content}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > len(content)+64 || !strings.Contains(string(b), "<&>") {
		t.Fatalf("stored input is %d bytes for %d bytes of content", len(b), len(content))
	}
}
