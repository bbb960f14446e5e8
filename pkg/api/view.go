package api

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// etag is the strong entity tag of a record: its version, which every write
// increments.
func etag(j job.Job) string { return `"` + strconv.FormatInt(j.Version, 10) + `"` }

// viewResponse answers status with the view of j and its ETag.
func viewResponse(status int, j job.Job) (events.APIGatewayV2HTTPResponse, error) {
	body, err := json.Marshal(wire.NewView(j))
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
