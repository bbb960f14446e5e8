package dynamodb

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// streamImage is what Lambda hands the notifier for an item: the stream
// record's image in DynamoDB JSON, read by aws-lambda-go.
func streamImage(t *testing.T, it map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	var out map[string]events.DynamoDBAttributeValue
	b, err := json.Marshal(lambdaJSON(it))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// lambdaJSON writes an item in DynamoDB JSON ({"S": ...}, {"N": ...}).
func lambdaJSON(it map[string]types.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range it {
		out[k] = valueJSON(v)
	}
	return out
}

func valueJSON(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	}
	panic("unused type")
}

func TestAStreamRecordReadsAsTheJobBeforeAndAfter(t *testing.T) {
	at := time.Date(2026, 12, 3, 4, 5, 6, 789_000_000, time.UTC)
	before := job.Job{ID: "job_abcdefghijklmnopqrstuvwxyz", Tenant: "t", RequestKey: "k", InputHash: "sha256:x", Model: "default",
		Input: json.RawMessage(`{"messages":[]}`), State: job.Running, Attempts: 1, MaxAttempts: 3, Budget: job.Cents(5), Reserve: 7,
		Held: 7, Deadline: at.Add(time.Hour), LeaseOwner: "w", LeaseUntil: at.Add(30 * time.Second), Version: 3, CreatedAt: at, UpdatedAt: at,
		Callback: job.Callback{URL: "https://hooks.example.com/x", Events: []job.State{job.Running, job.Succeeded}}}
	after := before
	after.State, after.Version, after.Held, after.Cost, after.LeaseOwner, after.LeaseUntil = job.Succeeded, 4, 0, 42, "", time.Time{}
	after.Result, after.CostEstimated, after.Progress = json.RawMessage(`{"output":"hi"}`), true, 1
	after.Deliveries = job.Deliveries{Attempts: 2, LastStatus: 500}

	rec := events.DynamoDBEventRecord{EventID: "e1", EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		OldImage: streamImage(t, toItem(before, indexes{activeShards: 4, createdShards: 4})), NewImage: streamImage(t, toItem(after, indexes{activeShards: 4, createdShards: 4}))}}
	old, cur, hadOld, hasNew, err := StreamChange(rec)
	if err != nil || !hadOld || !hasNew {
		t.Fatalf("StreamChange: %v %v %v", err, hadOld, hasNew)
	}
	for _, c := range []struct {
		got, want job.Job
	}{{old, before}, {cur, after}} {
		if c.got.State != c.want.State || c.got.Version != c.want.Version || c.got.Cost != c.want.Cost || c.got.Held != c.want.Held ||
			c.got.Callback.URL != c.want.Callback.URL || !slices.Equal(c.got.Callback.Events, c.want.Callback.Events) ||
			c.got.Deliveries != c.want.Deliveries || !c.got.UpdatedAt.Equal(c.want.UpdatedAt) || c.got.CostEstimated != c.want.CostEstimated ||
			string(c.got.Result) != string(c.want.Result) {
			t.Errorf("read %+v\nwant %+v", c.got, c.want)
		}
	}

	insert := events.DynamoDBEventRecord{EventID: "e0", EventName: "INSERT", Change: events.DynamoDBStreamRecord{NewImage: streamImage(t, toItem(before, indexes{activeShards: 4, createdShards: 4}))}}
	if _, _, hadOld, hasNew, err := StreamChange(insert); err != nil || hadOld || !hasNew {
		t.Fatalf("insert: %v %v %v", err, hadOld, hasNew)
	}
	broken := streamImage(t, toItem(before, indexes{activeShards: 4, createdShards: 4}))
	broken[aVersion] = events.NewNumberAttribute("not a number")
	if _, _, _, _, err := StreamChange(events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{NewImage: broken}}); err == nil {
		t.Fatal("an unreadable image was read")
	}
}
