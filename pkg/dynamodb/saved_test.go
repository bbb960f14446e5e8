package dynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// savedReads is a client whose failure index holds n overloaded failures
// (one shard), each record saving 7, and whose reads of a record fail
// from the failAt-th on.
type savedReads struct {
	broken
	n, failAt int32
	reads     atomic.Int32
}

func (c *savedReads) Query(_ context.Context, in *ddb.QueryInput, _ ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	out := &ddb.QueryOutput{}
	if in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS).Value != string(job.Overloaded)+"#0" {
		return out, nil
	}
	for i := range c.n {
		id := fmt.Sprintf("job_%026d", i)
		out.Items = append(out.Items, map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id},
			"fail_sk": &types.AttributeValueMemberS{Value: "0000000001000#" + id}, "cost_nc": &types.AttributeValueMemberN{Value: "10"}})
	}
	return out, nil
}

func (c *savedReads) GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	if c.reads.Add(1) >= c.failAt {
		return nil, errors.New("throttled")
	}
	return &ddb.GetItemOutput{Item: map[string]types.AttributeValue{"saved_nc": &types.AttributeValueMemberN{Value: "7"}}}, nil
}

// A report of what failures saved reads each one's record; the first
// read that fails stops the others (the report cannot be shown whole)
// and is the store's unavailable, not the driver's error.
func TestAFailedReadOfWhatAFailureSavedStopsTheRest(t *testing.T) {
	q := job.FailureQuery{Classes: []job.ErrorClass{job.Overloaded}, Saved: true}
	ok := &savedReads{n: 40, failAt: 1 << 30}
	var saved job.Nanocents
	if err := dynamodb.New(ok, "t", settings.Defaults()).Failures(t.Context(), q, func(f job.Failure) error {
		saved += f.Saved
		return nil
	}); err != nil || saved != 40*7 {
		t.Fatalf("%v, saved %s: want every record's 7", err, saved)
	}
	bad := &savedReads{n: 2000, failAt: 5}
	err := dynamodb.New(bad, "t", settings.Defaults()).Failures(t.Context(), q, func(job.Failure) error {
		t.Fatal("a failure reached the caller without what it saved")
		return nil
	})
	if job.ErrorCode(err) != job.CodeUnavailable {
		t.Fatalf("%v, want unavailable", err)
	}
	if n := bad.reads.Load(); n > 5+2*16 {
		t.Fatalf("%d reads of 2,000 after the 5th failed: the rest were not stopped", n)
	}
}
