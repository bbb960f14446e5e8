package openaitest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// The limits of one POST /embeddings the server holds a call to, as
// OpenAI's API reference states them
// (platform.openai.com/docs/api-reference/embeddings/create, `input`):
// at most 2048 inputs, none empty, at most 300,000 tokens summed.
const (
	MaxEmbeddingInputs = 2048
	MaxEmbeddingTokens = 300_000
)

// EmbeddingTokens is what the server bills a text: its bytes over four,
// one more, as it counts a chat message's (billLocked).
func EmbeddingTokens(text string) int64 { return int64(len(text)/4 + 1) }

// DefaultDimensions is the length of the vectors a model makes when a
// call names no dimensions: text-embedding-3-large's 3,072, any other's
// 1,536 (platform.openai.com/docs/guides/embeddings, "Embedding models").
func DefaultDimensions(model string) int {
	if strings.HasPrefix(model, "text-embedding-3-large") {
		return 3072
	}
	return 1536
}

// Vector is the vector the server answers for text at dims dimensions:
// each float in [-1, 1) from SHA-256 of the text and its block, so a test
// knows every text's vector without asking the server.
func Vector(text string, dims int) []float32 {
	v := make([]float32, dims)
	var block [32]byte
	for i := range v {
		if i%8 == 0 {
			block = sha256.Sum256(fmt.Appendf(nil, "%d\x00%s", i/8, text))
		}
		v[i] = float32(float64(binary.LittleEndian.Uint32(block[4*(i%8):]))/(1<<31) - 1)
	}
	return v
}

// EmbeddingCalls are the number of inputs of each embeddings call
// answered so far, in order.
func (s *Server) EmbeddingCalls() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.embedded...)
}

type embeddingBody struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions"`
}

var statusMarker = regexp.MustCompile(`\[\[openai:status=(\d{3})\]\]`)

// embeddings answers one POST /embeddings as embedAnswer does, billing
// what it answered.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var b embeddingBody
	if json.NewDecoder(r.Body).Decode(&b) != nil {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	status, body, tokens := embedAnswer(b)
	if status == http.StatusOK {
		s.mu.Lock()
		s.billEmbeddingLocked(b, tokens)
		s.mu.Unlock()
	}
	writeJSON(w, status, body)
}

// billEmbeddingLocked records an answered embeddings request of b, billed
// tokens (s.mu held).
func (s *Server) billEmbeddingLocked(b embeddingBody, tokens int64) {
	s.embedded = append(s.embedded, len(b.Input))
	s.bills = append(s.bills, Bill{ID: s.nextLocked("emb"), Model: b.Model, Input: tokens})
}

// embedAnswer is the status and body an embeddings request b is answered
// with, a call or a batch line alike, and the tokens it bills: refused
// 400 where OpenAI refuses it (refuseEmbedding), answered with a text's
// marked status ([[openai:status=N]] in any input), else each input's
// Vector, as floats or, with encoding_format base64, as the base64 of
// its little-endian float32s, billed EmbeddingTokens each.
func embedAnswer(b embeddingBody) (int, map[string]any, int64) {
	if e := refuseEmbedding(b); e != nil {
		return http.StatusBadRequest, e, 0
	}
	for _, t := range b.Input {
		if m := statusMarker.FindStringSubmatch(t); m != nil {
			code, _ := strconv.Atoi(m[1])
			return code, map[string]any{"error": map[string]any{"message": "refused", "type": "server_error", "code": nil}}, 0
		}
	}
	dims := b.Dimensions
	if dims == 0 {
		dims = DefaultDimensions(b.Model)
	}
	data := make([]map[string]any, len(b.Input))
	var tokens int64
	for i, t := range b.Input {
		var emb any = Vector(t, dims)
		if b.EncodingFormat == "base64" {
			emb = encode(Vector(t, dims))
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
		tokens += EmbeddingTokens(t)
	}
	return http.StatusOK, map[string]any{"object": "list", "data": data, "model": b.Model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}}, tokens
}

// refuseEmbedding is the 400 body OpenAI answers b with, nil when it
// takes it: an input list empty or over MaxEmbeddingInputs, an empty
// input, over MaxEmbeddingTokens in all, dimensions on a model before
// text-embedding-3 ("Only supported in text-embedding-3 and later
// models"), an unknown encoding_format.
func refuseEmbedding(b embeddingBody) map[string]any {
	var tokens int64
	for _, t := range b.Input {
		if t == "" {
			return invalidParam("input", "'$.input' is invalid")
		}
		tokens += EmbeddingTokens(t)
	}
	switch {
	case len(b.Input) == 0 || len(b.Input) > MaxEmbeddingInputs:
		return invalidParam("input", fmt.Sprintf("'$.input' must hold 1 to %d items", MaxEmbeddingInputs))
	case tokens > MaxEmbeddingTokens:
		return invalidParam("input", fmt.Sprintf("Requested %d tokens, max %d tokens per request", tokens, MaxEmbeddingTokens))
	case b.Dimensions != 0 && !strings.HasPrefix(b.Model, "text-embedding-3"):
		return invalidParam("dimensions", "This model does not support specifying dimensions.")
	case b.EncodingFormat != "" && b.EncodingFormat != "float" && b.EncodingFormat != "base64":
		return invalidParam("encoding_format", "encoding_format must be float or base64")
	}
	return nil
}

func invalidParam(param, message string) map[string]any {
	return map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": param, "code": nil}}
}

// encode is v as encoding_format base64 answers it.
func encode(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
