package payloads

import (
	"context"
	"time"

	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/s3"
)

// Links signs links that read a large answer from the payload store: the
// API's polls and the notifier's events carry them (pkg/api's and
// pkg/notifier's ResultLinks).
type Links struct{ p *s3.Payloads }

// NewLinks is Links on the configured bucket.
func NewLinks(b *roles.Base) Links { return Links{New(b)} }

// LinksOf is Links on p, for a tool with no role's Base (the console).
func LinksOf(p *s3.Payloads) Links { return Links{p} }

// ResultLink is a presigned GET of key that works for ttl.
func (l Links) ResultLink(ctx context.Context, key string, ttl time.Duration) (string, time.Time, error) {
	link, err := l.p.PresignGet(ctx, key, ttl)
	if err != nil {
		return "", time.Time{}, err
	}
	return link.URL, link.Expires, nil
}
