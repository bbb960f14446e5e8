package notifier

import (
	"context"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// ResultLinks signs a short-lived link that reads an answer kept in the
// payload store (pkg/app/payloads' Links): an event carries a large
// answer by link, as a poll does (docs/webhooks.md).
type ResultLinks interface {
	ResultLink(ctx context.Context, key string, ttl time.Duration) (url string, expires time.Time, err error)
}

// errNoResultLinks is a large answer on a notifier with no payload store
// to sign its link.
var errNoResultLinks = &job.Error{Code: job.CodeUnavailable, Message: "no payload store is configured to link a large answer"}

// event is the delivery of j, a large answer linked, signed now: a
// retry signs a fresh link. An answer whose link cannot be signed fails
// the delivery (retried on the callback schedule) rather than deliver
// the event without it.
func (n *Notifier) event(ctx context.Context, j job.Job) (wire.WebhookEvent, error) {
	ev := wire.NewWebhookEvent(j)
	if j.ResultRef == nil {
		return ev, nil
	}
	if n.cfg.ResultLinks == nil {
		return wire.WebhookEvent{}, errNoResultLinks
	}
	url, expires, err := n.cfg.ResultLinks.ResultLink(ctx, j.ResultRef.Key, wire.ResultLinkTTL)
	if err != nil {
		return wire.WebhookEvent{}, fmt.Errorf("link the answer of %s: %w", j.ID, err)
	}
	ev.Data.LinkResult(url, expires)
	return ev, nil
}
