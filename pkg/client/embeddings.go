package client

import (
	"encoding/json"
	"fmt"

	"github.com/aijobs/aijobs/pkg/wire"
)

// Embeddings is the vectors of an embedding job's result (View.Result,
// which Get fills even when the answer came by link), one a text in
// input order (docs/embeddings.md, "The vectors").
func Embeddings(result json.RawMessage) ([][]float32, error) {
	var r wire.Result
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("aijobs API: embeddings: %w", err)
	}
	return wire.DecodeEmbeddings(r.Output)
}
