package dynamodb

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/pkg/job"
)

// peekAttributes are the attributes of what a poll shows of a job
// (job.Peeked); TestPeekAttributesAreJobPeeked holds the two equal.
var peekAttributes = []string{
	aID, aTenant, aRequestKey, aInputHash, aModel, aMetadata, aResult, aResultRef,
	aState, aErrorClass, aResultModel, aResultLane, aAttempts, aMaxAttempts, aVersion,
	aBudget, aCost, aRemaining, aReserve, aCostEstimated, aSaved, aLanes, aAttemptLanes, aProgress,
	aDeadline, aCreated, aUpdated, aReplays,
	aCallbackURL, aCallbackEvents, aCallbackAttempts, aCallbackStatus, aCallbackDelivered, aCallbackVersion,
}

// peekProjection is the ProjectionExpression of a peek and its names.
var peekProjection, peekNames = projectionOf(peekAttributes)

// projectionOf is the ProjectionExpression of attrs and its names (every
// attribute through a placeholder: several are reserved words).
func projectionOf(attrs []string) (string, map[string]string) {
	names := make(map[string]string, len(attrs))
	refs := make([]string, len(attrs))
	for i, a := range attrs {
		ref := fmt.Sprintf("#p%d", i)
		names[ref], refs[i] = a, ref
	}
	return strings.Join(refs, ", "), names
}

// Peek reads what a poll shows of a job with an eventually consistent
// read, half the read units of Get's strongly consistent one (AWS, "DynamoDB
// read and write operations": an eventually consistent read of up to 4 KB
// takes one-half read unit). The answer may miss a write of the last
// second, and a job created that recently may not be found; the projection
// saves the transfer and decoding of the input, not read units (GetItem's
// units are counted on the whole item).
func (s *Store) Peek(ctx context.Context, id string) (job.Job, error) {
	return s.read(ctx, "peek at job", &ddb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(false),
		ProjectionExpression: aws.String(peekProjection), ExpressionAttributeNames: peekNames,
	})
}
