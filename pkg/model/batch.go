package model

import "context"

// Batcher is a provider that also takes generations in batches, the
// batch lane (docs/architecture.md, "The batch lane"): a collector
// submits the jobs waiting in a rung's batch lane as one batch, polls it,
// and settles each job from its result. The provider bills a batch's
// generations once, at its batch price, however often its results are
// read.
type Batcher interface {
	// SubmitBatch sends reqs as one batch under key, the collector's own
	// id for it (what the provider deduplicates on where it can, so a
	// collector that died after submitting and submits again makes no
	// second batch), and answers the provider's id for the batch. Each
	// request's JobID is its custom id.
	SubmitBatch(ctx context.Context, key string, reqs []Request) (string, error)
	// BatchEnded reports whether the batch id has ended (every request
	// answered, failed or expired).
	BatchEnded(ctx context.Context, id string) (bool, error)
	// BatchResults calls each with every request's outcome in the ended
	// batch id: its job id and its answer, or its error (an *Error whose
	// Usage is what it was billed).
	BatchResults(ctx context.Context, id string, each func(jobID string, resp Response, err error) error) error
}
