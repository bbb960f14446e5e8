package dynamodb

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// StreamChange reads one record of the jobs table's stream (view type
// NEW_AND_OLD_IMAGES, as the table is created) as the job before and after
// the write. hadOld and hasNew say which images the record carries: an
// INSERT has no old image, a REMOVE (the TTL's expiry) no new one. The
// item layout is this package's, so only it reads the images.
func StreamChange(r events.DynamoDBEventRecord) (old, cur job.Job, hadOld, hasNew bool, err error) {
	if len(r.Change.OldImage) > 0 {
		if old, err = fromItem(streamItem(r.Change.OldImage)); err != nil {
			return job.Job{}, job.Job{}, false, false, fmt.Errorf("stream record %s: old image: %w", r.EventID, err)
		}
		hadOld = true
	}
	if len(r.Change.NewImage) > 0 {
		if cur, err = fromItem(streamItem(r.Change.NewImage)); err != nil {
			return job.Job{}, job.Job{}, false, false, fmt.Errorf("stream record %s: new image: %w", r.EventID, err)
		}
		hasNew = true
	}
	return old, cur, hadOld, hasNew, nil
}

func streamItem(img map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		out[k] = streamValue(v)
	}
	return out
}

// streamValue converts a stream image's value to the SDK's: the two
// packages model the same DynamoDB JSON.
func streamValue(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		l := v.List()
		out := make([]types.AttributeValue, len(l))
		for i, e := range l {
			out[i] = streamValue(e)
		}
		return &types.AttributeValueMemberL{Value: out}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: streamItem(v.Map())}
	default:
		return &types.AttributeValueMemberNULL{Value: true}
	}
}
