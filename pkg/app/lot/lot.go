// Package lot wires the parking lot (pkg/parking on an S3 bucket, pkg/s3)
// for the two roles that settle attempts, the worker and the reconciler.
// It is a package of its own, which pkg/app/workerrole and
// pkg/app/reconcilerrole share, so that the other functions do not link
// the S3 SDK (docs/benchmarks.md, "Cold start and size").
package lot

import (
	"context"

	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/s3"
)

// New is the lot on the configured bucket (AIJOBS_PARK_BUCKET).
func New(b *roles.Base) *s3.Lot { return s3.New(s3.NewClient(b.AWS), b.Config.ParkBucket) }

// Create makes the bucket on an emulator, as the dev server does.
func Create(ctx context.Context, b *roles.Base) error {
	return s3.CreateBucket(ctx, s3.NewClient(b.AWS), b.Config.ParkBucket)
}
