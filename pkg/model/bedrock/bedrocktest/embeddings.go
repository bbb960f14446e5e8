package bedrocktest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// TitanTokens is what the server bills a text: its bytes over four, one
// more.
func TitanTokens(text string) int64 { return int64(len(text)/4 + 1) }

// TitanVector is the vector the server answers for text at dims
// dimensions: each float in [-1, 1) from SHA-256 of the text and its
// block, so a test knows every text's vector without asking the server.
func TitanVector(text string, dims int) []float32 {
	v := make([]float32, dims)
	var block [32]byte
	for i := range v {
		if i%8 == 0 {
			block = sha256.Sum256(fmt.Appendf(nil, "titan\x00%d\x00%s", i/8, text))
		}
		v[i] = float32(float64(binary.LittleEndian.Uint32(block[4*(i%8):]))/(1<<31) - 1)
	}
	return v
}

// Invocations is how many InvokeModel calls were answered.
func (s *Server) Invocations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.invoked
}

// invoke answers one InvokeModel of Cohere Embed (cohere.go) or of Titan
// Text Embeddings V2 as its model
// parameters page documents it
// (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html):
// a body {"inputText", "dimensions"} (1024 by default, else 256 or 512),
// an answer {"embedding", "inputTextTokenCount"}. Any other model, an
// empty text or another length is a ValidationException, as is a text
// holding [[bedrock:error=...]] (its status then 400, unbilled).
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.PathValue("model"), "cohere.embed-") {
		s.invokeCohere(w, r)
		return
	}
	var b struct {
		InputText  string `json:"inputText"`
		Dimensions int    `json:"dimensions"`
	}
	err := json.NewDecoder(r.Body).Decode(&b)
	dims := b.Dimensions
	if dims == 0 {
		dims = 1024
	}
	if err != nil || !strings.Contains(r.PathValue("model"), "amazon.titan-embed-text-v2") || b.InputText == "" ||
		!slices.Contains([]int{256, 512, 1024}, dims) || strings.Contains(b.InputText, "[[bedrock:error=") {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	s.mu.Lock()
	s.invoked++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"embedding": TitanVector(b.InputText, dims),
		"inputTextTokenCount": TitanTokens(b.InputText),
		"embeddingsByType":    map[string]any{"float": TitanVector(b.InputText, dims)}})
}
