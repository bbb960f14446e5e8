// Package dynamodbstreams reads the jobs table's DynamoDB Stream for the
// dev server, which emulates the Lambda event source mapping that feeds
// the notifier in AWS. It hands records over as Lambda delivers them, so
// the notifier's handler runs unchanged on both.
package dynamodbstreams

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awsstreams "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Client is the part of the DynamoDB Streams API this package calls.
type Client interface {
	DescribeStream(context.Context, *awsstreams.DescribeStreamInput, ...func(*awsstreams.Options)) (*awsstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *awsstreams.GetShardIteratorInput, ...func(*awsstreams.Options)) (*awsstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *awsstreams.GetRecordsInput, ...func(*awsstreams.Options)) (*awsstreams.GetRecordsOutput, error)
}

// TableAPI is what finding a table's stream needs.
type TableAPI interface {
	DescribeTable(context.Context, *ddb.DescribeTableInput, ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
}

// maxRecords is GetRecords' largest Limit.
const maxRecords = 1000

// Stream is one table's stream.
type Stream struct {
	client Client
	arn    string
}

// NewClient builds a DynamoDB Streams client for cfg (pkg/awsclient.Load's).
func NewClient(cfg aws.Config) *awsstreams.Client { return awsstreams.NewFromConfig(cfg) }

// New returns the stream whose ARN is arn.
func New(client Client, arn string) *Stream { return &Stream{client: client, arn: arn} }

// Find returns the table's latest stream. A table without one was created
// before CreateTable asked for it: DynamoDB keeps an existing table's
// shape, so it has to be deleted and created again (kumo cannot enable a
// stream with UpdateTable).
func Find(ctx context.Context, tables TableAPI, client Client, table string) (*Stream, error) {
	out, err := tables.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("dynamodbstreams: describe table %s: %w", table, err)
	}
	arn := ""
	if out.Table != nil {
		arn = aws.ToString(out.Table.LatestStreamArn)
	}
	if arn == "" {
		return nil, fmt.Errorf("dynamodbstreams: table %s has no stream: it predates the stream; delete it and start again", table)
	}
	return New(client, arn), nil
}

// ARN is the stream's ARN, which Lambda puts in every record's
// eventSourceARN.
func (s *Stream) ARN() string { return s.arn }

// Shards lists the stream's shards, each mapped to its parent's id (""
// for none), following DescribeStream's pages.
func (s *Stream) Shards(ctx context.Context) (map[string]string, error) {
	shards := map[string]string{}
	var start *string
	for {
		out, err := s.client.DescribeStream(ctx, &awsstreams.DescribeStreamInput{StreamArn: aws.String(s.arn), ExclusiveStartShardId: start})
		if err != nil {
			return nil, fmt.Errorf("dynamodbstreams: describe stream %s: %w", s.arn, err)
		}
		if out.StreamDescription == nil {
			return shards, nil
		}
		for _, sh := range out.StreamDescription.Shards {
			shards[aws.ToString(sh.ShardId)] = aws.ToString(sh.ParentShardId)
		}
		start = out.StreamDescription.LastEvaluatedShardId
		if aws.ToString(start) == "" {
			return shards, nil
		}
	}
}

// Iterator returns a position in shard: its oldest record (TRIM_HORIZON)
// when after is "", else just after the record whose sequence number is
// after (AFTER_SEQUENCE_NUMBER).
func (s *Stream) Iterator(ctx context.Context, shard, after string) (string, error) {
	in := &awsstreams.GetShardIteratorInput{StreamArn: aws.String(s.arn), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	if after != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(after)
	}
	out, err := s.client.GetShardIterator(ctx, in)
	if err != nil {
		return "", fmt.Errorf("dynamodbstreams: shard iterator for %s: %w", shard, err)
	}
	return aws.ToString(out.ShardIterator), nil
}

// Records reads up to max records at iterator, as Lambda delivers them,
// and returns them with the next iterator: "" once the shard is closed
// and read to its end. An iterator expires (after 15 minutes in AWS, 5 in
// kumo): on any error, take a new one after the last record read.
func (s *Stream) Records(ctx context.Context, iterator string, max int) ([]events.DynamoDBEventRecord, string, error) {
	out, err := s.client.GetRecords(ctx, &awsstreams.GetRecordsInput{ShardIterator: aws.String(iterator), Limit: aws.Int32(int32(min(max, maxRecords)))})
	if err != nil {
		return nil, "", fmt.Errorf("dynamodbstreams: get records: %w", err)
	}
	recs := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, r := range out.Records {
		recs = append(recs, Event(r, s.arn))
	}
	return recs, aws.ToString(out.NextShardIterator), nil
}
