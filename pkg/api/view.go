package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// etag is the strong entity tag of a record: its version, which every write
// increments.
func etag(j job.Job) string { return `"` + strconv.FormatInt(j.Version, 10) + `"` }

// ResultLinks signs a short-lived link that reads an answer kept in the
// payload store (pkg/app/payloads' Links): a poll of a large answer
// carries the link, never the body, which could pass Lambda's 6 MB
// response limit.
type ResultLinks interface {
	ResultLink(ctx context.Context, key string, ttl time.Duration) (url string, expires time.Time, err error)
}

// errNoResultLinks is a large answer on an API with no payload store to
// sign its link: the view cannot carry it, and must not omit it.
var errNoResultLinks = &job.Error{Code: job.CodeUnavailable, Message: "no payload store is configured to link a large answer"}

// viewResponse answers status with the view of j and its ETag; a large
// answer is linked (docs/payloads.md, "Answers"). A link that cannot be
// signed is an unavailable error (a 503), never a view whose answer is
// silently missing.
func (h *Handler) viewResponse(ctx context.Context, status int, j job.Job) (events.APIGatewayV2HTTPResponse, error) {
	v := wire.NewView(j)
	if j.ResultRef != nil {
		if h.links == nil {
			return events.APIGatewayV2HTTPResponse{}, errNoResultLinks
		}
		url, expires, err := h.links.ResultLink(ctx, j.ResultRef.Key, wire.ResultLinkTTL)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("link the answer of %s: %w", j.ID, err)
		}
		v.LinkResult(url, expires)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("encode the view of %s: %w", j.ID, err)
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":  "application/json",
			"Cache-Control": "no-store",
			"ETag":          etag(j),
		},
		Body: string(body),
	}, nil
}
