package dynamodbstreams

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Event is r as Lambda's event source mapping delivers it to a function:
// the record's own fields, and eventSourceARN set to the stream's ARN
// (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html, "Example
// event").
func Event(r types.Record, streamARN string) events.DynamoDBEventRecord {
	e := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if r.UserIdentity != nil {
		e.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(r.UserIdentity.Type), PrincipalID: aws.ToString(r.UserIdentity.PrincipalId)}
	}
	if d := r.Dynamodb; d != nil {
		e.Change = events.DynamoDBStreamRecord{
			Keys:           attributes(d.Keys),
			NewImage:       attributes(d.NewImage),
			OldImage:       attributes(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber),
			SizeBytes:      aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		}
		if d.ApproximateCreationDateTime != nil {
			e.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
		}
	}
	return e
}

func attributes(m map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = attribute(v)
	}
	return out
}

// attribute converts every type DynamoDB stores; an unknown member (a type
// newer than this SDK) becomes NULL rather than being dropped silently
// from the image.
func attribute(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, 0, len(v.Value))
		for _, x := range v.Value {
			l = append(l, attribute(x))
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(attributes(v.Value))
	}
	return events.NewNullAttribute()
}
