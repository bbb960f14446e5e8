package collector

import (
	"context"
	"errors"
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
)

// Inputs reads an input the record keeps in the payload store
// (job.Job.InputRef, docs/payloads.md): pkg/s3's Payloads is one. Get
// answers job.NotFound for a key that does not exist, job.CodeTooLarge
// past limit.
type Inputs interface {
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
}

// errInputLost is a stored input gone or not the one written: the job is
// handed back as one whose input is not valid, and its worker ends it.
var errInputLost = errors.New("the stored input is missing or is not the one the job was created with")

// loadInput puts j's stored input in j.Input. An error wrapping
// errInputLost is for good (j.Input stays empty, which decodes as no
// valid input); any other is the store not answering now.
func (c *Collector) loadInput(ctx context.Context, j *job.Job) error {
	ref := j.InputRef
	if ref == nil || len(j.Input) > 0 {
		return nil
	}
	if c.inputs == nil {
		return fmt.Errorf("%w: this collector reads no payload store", errInputLost)
	}
	b, err := c.inputs.Get(ctx, ref.Key, ref.Size)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound, job.CodeTooLarge:
		return fmt.Errorf("%w: %s", errInputLost, err)
	default:
		return fmt.Errorf("read the input of %s: %w", j.ID, err)
	}
	if err := ref.Check(b); err != nil {
		return fmt.Errorf("%w: %s", errInputLost, err)
	}
	j.Input = b
	return nil
}
