package modeltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aijobs/aijobs/pkg/model"
)

// Sample is the provider's testdata/samples/name: an answer as its
// documentation shows it.
func Sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// OnlyBill is the one answer a fake server billed, failing t unless it
// billed exactly one.
func OnlyBill[B any](t testing.TB, billed []B) B {
	t.Helper()
	if len(billed) != 1 {
		t.Fatalf("%d answers billed, want 1", len(billed))
	}
	return billed[0]
}

// Counts are one answer's counts as a provider that counts the prompt
// cache apart from its input (Anthropic, Bedrock) reports them: Input
// leaves the cache's reads and writes out.
type Counts struct {
	Input, CacheRead, CacheWrite, Output int64
}

// CacheApart fails t unless got is the usage of an answer that reported
// c: every input token, the cache's reads and writes included, and those
// named apart.
func CacheApart(t testing.TB, got model.Usage, c Counts) {
	t.Helper()
	want := model.Usage{InputTokens: c.Input + c.CacheRead + c.CacheWrite, OutputTokens: c.Output,
		CachedInputTokens: c.CacheRead, CacheWriteTokens: c.CacheWrite}
	if got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
}
