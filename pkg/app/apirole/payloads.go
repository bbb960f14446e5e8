package apirole

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/s3"
)

// inputs is the payload store as the API uses it: pkg/s3's Payloads, its
// presigned PUT in the API's own terms (the API links no adapter type).
type inputs struct{ *s3.Payloads }

func (p inputs) PresignUpload(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (api.UploadLink, error) {
	l, err := p.PresignPut(ctx, key, contentType, size, ttl)
	return api.UploadLink{Method: l.Method, URL: l.URL, Headers: l.Headers, Expires: l.Expires}, err
}
