package bedrocktest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CohereTokens is what the server bills a text on Cohere Embed v3: its
// bytes over three, one more (another rule than Titan's, so a test that
// mixes them up fails).
func CohereTokens(text string) int64 { return int64(len(text)/3 + 1) }

// CohereVector is the 1,024-float vector the server answers for text,
// from SHA-256 as TitanVector's but under another label.
func CohereVector(text string) []float32 {
	v := make([]float32, 1024)
	var block [32]byte
	for i := range v {
		if i%8 == 0 {
			block = sha256.Sum256(fmt.Appendf(nil, "cohere\x00%d\x00%s", i/8, text))
		}
		v[i] = float32(float64(binary.LittleEndian.Uint32(block[4*(i%8):]))/(1<<31) - 1)
	}
	return v
}

// CohereCalls is how many texts each Cohere Embed call held, in the
// order answered.
func (s *Server) CohereCalls() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cohereCalls)
}

// cohereInputTypes are input_type's documented values for texts.
var cohereInputTypes = []string{"search_document", "search_query", "classification", "clustering"}

// invokeCohere answers one InvokeModel of Cohere Embed v3 as its model
// parameters page documents it
// (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v3.html):
// a body {"texts", "input_type", "truncate", "embedding_types"} of at
// most 96 texts of at most 2,048 characters, an answer {"id", "texts",
// "embeddings": {"float": [...]}, "response_type": "embeddings_by_type"}
// (embedding_types asked: float only). The input tokens are in the
// X-Amzn-Bedrock-Input-Token-Count header, not the body; a text holding
// [[bedrock:nousage]] leaves the header out. More texts, a longer or
// empty one, an unknown input_type or another embedding type is a
// ValidationException, as is a text holding [[bedrock:error=...]].
func (s *Server) invokeCohere(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Texts          []string `json:"texts"`
		InputType      string   `json:"input_type"`
		Truncate       string   `json:"truncate"`
		EmbeddingTypes []string `json:"embedding_types"`
	}
	err := json.NewDecoder(r.Body).Decode(&b)
	if err != nil || len(b.Texts) == 0 || len(b.Texts) > 96 || !slices.Contains(cohereInputTypes, b.InputType) ||
		!slices.Equal(b.EmbeddingTypes, []string{"float"}) || !slices.Contains([]string{"", "NONE", "START", "END"}, b.Truncate) {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	var tokens int64
	vectors := make([][]float32, len(b.Texts))
	usage := true
	for i, t := range b.Texts {
		if t == "" || utf8.RuneCountInString(t) > 2048 || strings.Contains(t, "[[bedrock:error=") {
			fail(w, http.StatusBadRequest, "ValidationException")
			return
		}
		usage = usage && !strings.Contains(t, "[[bedrock:nousage]]")
		tokens += CohereTokens(t)
		vectors[i] = CohereVector(t)
	}
	s.mu.Lock()
	s.invoked++
	s.cohereCalls = append(s.cohereCalls, len(b.Texts))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if usage {
		w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.FormatInt(tokens, 10))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "cohere-" + strconv.Itoa(len(b.Texts)), "texts": b.Texts,
		"embeddings": map[string]any{"float": vectors}, "response_type": "embeddings_by_type"})
}
