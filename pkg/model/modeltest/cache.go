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

// CacheApart fails t unless got is one answer's usage from a provider
// that counts the prompt cache apart from its input (Anthropic, Bedrock):
// input is the answer's own input count, which leaves the cache's read
// and write out, so every input token is all three, the cache's named
// apart.
func CacheApart(t testing.TB, got model.Usage, input, read, write, output int64) {
	t.Helper()
	want := model.Usage{InputTokens: input + read + write, OutputTokens: output, CachedInputTokens: read, CacheWriteTokens: write}
	if got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
}
