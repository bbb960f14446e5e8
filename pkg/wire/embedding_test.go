package wire_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/wire"
)

// Vectors encoded as an embedding answer read back bit for bit, in order;
// the encoding of one vector is the base64 of its little-endian float32s.
func TestEmbeddingsRoundTrip(t *testing.T) {
	vectors := [][]float32{{1, -2.5, float32(math.Pi)}, {0, float32(math.Inf(1)), -0}, {math.SmallestNonzeroFloat32}}
	var enc []string
	for _, v := range vectors {
		enc = append(enc, wire.EncodeVector(v))
	}
	// 1.0 is 0x3f800000, little-endian 00 00 80 3f.
	if got := wire.EncodeVector([]float32{1}); got != "AACAPw==" {
		t.Errorf("1.0 encodes as %s, want AACAPw==", got)
	}
	out := wire.EncodeEmbeddings(enc)
	if want := `{"index":0,"embedding":"` + enc[0] + `"}` + "\n"; !strings.HasPrefix(out, want) {
		t.Errorf("first line %q, want %q", strings.SplitAfter(out, "\n")[0], want)
	}
	got, err := wire.DecodeEmbeddings(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vectors) {
		t.Fatalf("%d vectors back, want %d", len(got), len(vectors))
	}
	for i := range vectors {
		if !slices.EqualFunc(got[i], vectors[i], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("vector %d: %v, want %v", i, got[i], vectors[i])
		}
	}
}

// A broken answer is an error, never vectors: out of order, not base64,
// not whole floats.
func TestDecodeEmbeddingsRefusesABrokenAnswer(t *testing.T) {
	for name, out := range map[string]string{
		"out of order":  `{"index":1,"embedding":"AACAPw=="}` + "\n",
		"not base64":    `{"index":0,"embedding":"***"}` + "\n",
		"partial float": `{"index":0,"embedding":"AACA"}` + "\n",
		"unknown field": `{"index":0,"embedding":"AACAPw==","x":1}` + "\n",
	} {
		if _, err := wire.DecodeEmbeddings(out); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
