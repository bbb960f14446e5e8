package model

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Batcher is a provider that also takes generations in batches, the
// batch lane (docs/lanes.md, "The batch lane"): a collector
// submits the jobs waiting in a rung's batch lane as one batch, polls it,
// and settles each job from its result. The provider bills a batch's
// generations once, at its batch price, however often its results are
// read.
type Batcher interface {
	// SubmitBatch sends reqs as one batch under key, the collector's own
	// id for it (what the provider deduplicates on where it can, so a
	// collector that died after submitting and submits again makes no
	// second batch), and answers the provider's id for the batch. Each
	// request's JobID is its custom id, or names each of its lines where
	// one request is several (an embedding job's texts, a call's worth
	// a line: docs/embeddings.md, "The batch lane").
	SubmitBatch(ctx context.Context, key string, reqs []Request) (string, error)
	// BatchEnded reports whether the batch id has ended (every request
	// answered, failed or expired).
	BatchEnded(ctx context.Context, id string) (bool, error)
	// BatchResults calls each with every request's outcome in the ended
	// batch id, once a request: its job id and its answer, or its error
	// (an *Error whose Usage is what it was billed).
	BatchResults(ctx context.Context, id string, each func(jobID string, resp Response, err error) error) error
}

// EachResult calls each with every line of a batch's JSONL results read
// from r (OpenAI's output and error files, Anthropic's results, Bedrock's
// .jsonl.out), decoded as an L, in order. A line that does not decode is
// skipped, as one that names no request is by each: its job, with no
// result, is handed back by the collector. The error is each's as it
// returned it, or r's read error after what (the caller's words for what
// it read).
func EachResult[L any](r io.Reader, what string, each func(L) error) error {
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes('\n')
		var l L
		if json.Unmarshal(raw, &l) == nil {
			if err := each(l); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}
