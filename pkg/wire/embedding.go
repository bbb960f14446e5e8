package wire

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// EmbeddingLine is one line of an embedding job's answer
// (docs/embeddings.md, "The vectors"): the vector of the text at Index
// of the input, as the base64 of its little-endian float32s, which is
// what OpenAI's `encoding_format: base64` answers, so its vectors pass
// through unchanged.
type EmbeddingLine struct {
	Index     int    `json:"index"`
	Embedding string `json:"embedding"`
}

// EncodeVector is v as an EmbeddingLine's embedding.
func EncodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeVector is an EmbeddingLine's embedding as floats: an error when
// it is not base64 of whole float32s.
func DecodeVector(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("embedding: %d bytes is not whole float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// EncodeEmbeddings is vectors (each already EncodeVector's) as an
// embedding job's answer: JSON Lines, one line a text in input order,
// each ending in a newline.
func EncodeEmbeddings(vectors []string) string {
	var sb strings.Builder
	for i, v := range vectors {
		b, _ := json.Marshal(EmbeddingLine{Index: i, Embedding: v}) // two plain members: cannot fail
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// DecodeEmbeddings reads an embedding job's answer (a Result's Output)
// back into its vectors, in input order: an error when a line is not an
// EmbeddingLine, its index is not the next, or its vector does not decode.
func DecodeEmbeddings(output string) ([][]float32, error) {
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(nil, 1<<20) // a line of 3,072 dimensions is about 16 KB
	var out [][]float32
	for sc.Scan() {
		var l EmbeddingLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("embeddings line %d: %w", len(out)+1, err)
		}
		if l.Index != len(out) {
			return nil, fmt.Errorf("embeddings line %d: index %d, want %d", len(out)+1, l.Index, len(out))
		}
		v, err := DecodeVector(l.Embedding)
		if err != nil {
			return nil, fmt.Errorf("embeddings line %d: %w", len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	return out, nil
}
