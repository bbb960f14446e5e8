// Package payloads wires the payload store (pkg/s3's Payloads on the
// configured bucket) for the roles that read or write what does not fit
// a job's record: the API, the worker, the notifier.
package payloads

import (
	"context"

	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/s3"
)

// New is the store on the configured bucket (AIJOBS_PAYLOAD_BUCKET).
func New(b *roles.Base) *s3.Payloads {
	return s3.NewPayloads(s3.NewClient(b.AWS), b.Config.PayloadBucket)
}

// Create makes the bucket on an emulator, as the dev server does.
func Create(ctx context.Context, b *roles.Base) error {
	return s3.CreateBucket(ctx, s3.NewClient(b.AWS), b.Config.PayloadBucket)
}
