package dynamodb_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// recorder keeps every UpdateItem; with refuse set it refuses every
// transition's write (not the cost-only add) and reads back a finished job,
// so the refusal paths are recorded too.
type recorder struct {
	refuse  bool
	item    map[string]types.AttributeValue // what reads answer; finished if nil
	mu      sync.Mutex
	inputs  []*ddb.UpdateItemInput
	queries []*ddb.QueryInput
}

var finished = map[string]types.AttributeValue{
	"id": &types.AttributeValueMemberS{Value: "job_x"}, "tenant": &types.AttributeValueMemberS{Value: "t"},
	"state": &types.AttributeValueMemberS{Value: "succeeded"}, "version": &types.AttributeValueMemberN{Value: "3"},
}

// failedRecord is a failed job with budget left: what a replay writes on.
var failedRecord = map[string]types.AttributeValue{
	"id": &types.AttributeValueMemberS{Value: "job_x"}, "tenant": &types.AttributeValueMemberS{Value: "t"},
	"state": &types.AttributeValueMemberS{Value: "failed"}, "version": &types.AttributeValueMemberN{Value: "3"},
	"budget_nc": &types.AttributeValueMemberN{Value: "100"}, "remaining_nc": &types.AttributeValueMemberN{Value: "100"},
}

func (r *recorder) PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	return &ddb.PutItemOutput{}, nil
}

func (r *recorder) GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	return &ddb.GetItemOutput{Item: r.record()}, nil
}

func (r *recorder) record() map[string]types.AttributeValue {
	if r.item != nil {
		return r.item
	}
	return finished
}

func (r *recorder) Query(_ context.Context, in *ddb.QueryInput, _ ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	r.mu.Lock()
	r.queries = append(r.queries, in)
	r.mu.Unlock()
	return &ddb.QueryOutput{}, nil
}

func (r *recorder) Scan(_ context.Context, in *ddb.ScanInput, _ ...func(*ddb.Options)) (*ddb.ScanOutput, error) {
	r.mu.Lock()
	r.queries = append(r.queries, &ddb.QueryInput{FilterExpression: in.FilterExpression, KeyConditionExpression: in.ProjectionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues})
	r.mu.Unlock()
	return &ddb.ScanOutput{}, nil
}

func (r *recorder) UpdateItem(_ context.Context, in *ddb.UpdateItemInput, _ ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	r.mu.Lock()
	r.inputs = append(r.inputs, in)
	r.mu.Unlock()
	if r.refuse && !strings.HasPrefix(aws.ToString(in.ConditionExpression), "(attribute_exists(") {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	return &ddb.UpdateItemOutput{Attributes: r.record()}, nil
}

// TestRefusedSettleShapes: a refused finish's settlement is decided from
// the record (job.AddCost): an attempt written off, or whose lease is
// still on a cancelled record, writes another shape; each uses every
// placeholder it declares.
func TestRefusedSettleShapes(t *testing.T) {
	cancelledDuring := map[string]types.AttributeValue{}
	writtenOff := map[string]types.AttributeValue{}
	for k, v := range finished {
		cancelledDuring[k], writtenOff[k] = v, v
	}
	cancelledDuring["state"] = &types.AttributeValueMemberS{Value: "abandoned"}
	cancelledDuring["lease_owner"] = &types.AttributeValueMemberS{Value: "w"}
	writtenOff["settled"] = &types.AttributeValueMemberSS{Value: []string{"w#writeoff"}}
	for name, item := range map[string]map[string]types.AttributeValue{"cancelled during the attempt": cancelledDuring, "written off": writtenOff} {
		r := &recorder{refuse: true, item: item}
		st := dynamodb.New(r, "jobs", settings.Defaults())
		_, _ = st.Release(t.Context(), job.Release{ID: "job_x", Owner: "w", Now: base, Settlement: job.Settlement{Cost: 1, Held: 2, Ran: time.Second}, Class: job.Timeout})
		var shapes int
		for _, in := range r.inputs {
			cond := aws.ToString(in.ConditionExpression)
			if !strings.HasPrefix(cond, "(attribute_exists(") {
				continue
			}
			shapes++
			exprs := cond + " " + aws.ToString(in.UpdateExpression)
			for k := range in.ExpressionAttributeValues {
				if !used(exprs, k) {
					t.Errorf("%s: value %s unused in %q", name, k, exprs)
				}
			}
			for k := range in.ExpressionAttributeNames {
				if !used(exprs, k) {
					t.Errorf("%s: name %s unused in %q", name, k, exprs)
				}
			}
			if name == "written off" && !strings.Contains(cond, "AND contains(#settled") {
				t.Errorf("%s: %q is not conditioned on the write-off", name, cond)
			}
			if name == "cancelled during the attempt" && !strings.Contains(aws.ToString(in.UpdateExpression), "REMOVE #lease_owner") {
				t.Errorf("%s: %q does not remove the attempt's lease", name, aws.ToString(in.UpdateExpression))
			}
		}
		if shapes == 0 {
			t.Errorf("%s: no settlement written", name)
		}
	}
}

// TestEveryPlaceholderIsUsed: DynamoDB refuses a request whose
// ExpressionAttributeValues or ExpressionAttributeNames hold an entry no
// expression uses; kumo does not check, so this test does, for every
// shape of every write.
func TestEveryPlaceholderIsUsed(t *testing.T) {
	id, now := "job_x", base
	res := json.RawMessage(`{}`)
	for _, refuse := range []bool{false, true} {
		r := &recorder{refuse: refuse}
		st := dynamodb.New(r, "jobs", settings.Defaults())
		ctx := t.Context()
		_, _ = st.Claim(ctx, job.Claim{ID: id, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute)})
		_, _ = st.Heartbeat(ctx, job.Heartbeat{ID: id, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), Progress: 0.5})
		_, _ = st.HoldMore(ctx, job.HoldMore{ID: id, Owner: "w", Now: now, Amount: 5})
		_, _ = st.Succeed(ctx, job.Succeed{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1, Held: 2, Ran: time.Second}, Result: res, Model: "m", ExpiresAt: keep})
		_, _ = st.Succeed(ctx, job.Succeed{ID: id, Owner: "w", Now: now})
		_, _ = st.Succeed(ctx, job.Succeed{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1, Saved: 3}, Model: "m", Lane: job.Flex})
		_, _ = st.Release(ctx, job.Release{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1, Saved: -3, Estimated: true}, Class: job.Timeout})
		_, _ = st.Succeed(ctx, job.Succeed{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1, Estimated: true}})
		_, _ = st.Release(ctx, job.Release{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1, Estimated: true}, Class: job.Timeout})
		_, _ = st.End(ctx, job.End{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1, Estimated: true}, Class: job.Auth})
		_, _ = st.Release(ctx, job.Release{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1}, Class: job.Timeout, Detail: "d"})
		_, _ = st.Release(ctx, job.Release{ID: id, Owner: "w", Now: now, Class: job.Timeout})
		_, _ = st.End(ctx, job.End{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1}, Class: job.Auth, Detail: "d", ExpiresAt: keep})
		_, _ = st.End(ctx, job.End{ID: id, Now: now, Class: job.DeadlineExceeded})
		_, _ = st.End(ctx, job.End{ID: id, Now: now, Class: job.DeadLettered, NotReplayedSince: now.Add(-time.Minute)})
		_, _ = st.Cancel(ctx, job.Cancel{ID: id, Tenant: "t", Now: now, ExpiresAt: keep})
		_, _ = st.Cancel(ctx, job.Cancel{ID: id, Tenant: "t", Now: now})
		_, _ = st.WriteOff(ctx, job.WriteOff{ID: id, Owner: "w", Now: now, Version: 3, Held: 5, State: job.Running})
		_, _ = st.WriteOff(ctx, job.WriteOff{ID: id, Owner: "w", Now: now, Version: 3, State: job.Abandoned})
		r.item = failedRecord // a replay measures the record first, and writes only a failed one's
		_, _ = st.Replay(ctx, job.Replay{ID: id, Now: now, Attempts: 2, Deadline: now.Add(time.Hour), ExpiresAt: keep})
		_, _ = st.Replay(ctx, job.Replay{ID: id, Now: now, Attempts: 2, Deadline: now.Add(time.Hour)})
		r.item = nil
		_, _ = st.Nudge(ctx, job.Nudge{ID: id, Now: now, Stale: now.Add(-time.Hour)})
		_, _ = st.Nudge(ctx, job.Nudge{ID: id, Now: now, Stale: now.Add(-time.Hour), Queued: job.NudgeNone})
		_, _ = st.Nudge(ctx, job.Nudge{ID: id, Now: now, Stale: now.Add(-time.Hour), Queued: job.NudgeFirst})
		if refuse {
			_, _ = st.List(ctx, job.ListQuery{Tenant: "t"})
			_, _ = st.List(ctx, job.ListQuery{Tenant: "t", State: job.Failed, Class: job.Auth, Since: now, Cursor: job.Position{CreatedAt: now, ID: job.NewID("t", "k")}.Cursor()})
			_ = st.Failures(ctx, job.FailureQuery{Since: now, Until: now.Add(time.Hour), Classes: []job.ErrorClass{job.Auth}}, func(job.Failure) error { return nil })
			_ = st.Unfinished(ctx, now, func(string) error { return nil })
			_ = st.Finished(ctx, job.FinishedQuery{Model: "default", Limit: 10, Since: now, Now: now}, func(job.Job) error { return nil })
			_ = st.Recent(ctx, job.RecentQuery{Since: now, Now: now}, func(job.Job) error { return nil })
			// A list reads every tenant shard at once; Finished and Recent
			// each read Now's day and the next, every shard.
			d := settings.Defaults()
			if want := 2*d.TenantShards + d.FailureShards + d.ActiveShards + 2*d.CreatedShards + 2*d.CreatedShards + d.ActiveShards; len(r.queries) != want {
				t.Errorf("%d reads recorded, want %d: 2 lists of %d tenant shards, %d failure shards, %d active shards, finished's 2 days of %d created shards, and recent's 2 days of %d created shards and %d active shards",
					len(r.queries), want, d.TenantShards, d.FailureShards, d.ActiveShards, d.CreatedShards, d.CreatedShards, d.ActiveShards)
			}
		}
		for _, in := range r.queries {
			exprs := aws.ToString(in.KeyConditionExpression) + " " + aws.ToString(in.FilterExpression) + " " + aws.ToString(in.ProjectionExpression)
			for k := range in.ExpressionAttributeValues {
				if !used(exprs, k) {
					t.Errorf("value %s unused in %q", k, exprs)
				}
			}
			for k := range in.ExpressionAttributeNames {
				if !used(exprs, k) {
					t.Errorf("name %s unused in %q", k, exprs)
				}
			}
		}
		costOnly, replays := 0, 0
		for _, in := range r.inputs {
			exprs := aws.ToString(in.ConditionExpression) + " " + aws.ToString(in.UpdateExpression)
			if strings.HasPrefix(aws.ToString(in.ConditionExpression), "(attribute_exists(") {
				costOnly++
			}
			if strings.Contains(aws.ToString(in.UpdateExpression), "#replays") {
				replays++
			}
			for k := range in.ExpressionAttributeValues {
				if !used(exprs, k) {
					t.Errorf("value %s unused in %q", k, exprs)
				}
			}
			for k := range in.ExpressionAttributeNames {
				if !used(exprs, k) {
					t.Errorf("name %s unused in %q", k, exprs)
				}
			}
		}
		if replays != 2 {
			t.Errorf("%d replay writes recorded, want 2", replays)
		}
		if refuse && costOnly != 8 {
			t.Errorf("%d cost-only adds recorded, want 8 (the refused finishes with a cost)", costOnly)
		}
	}
}

func used(exprs, placeholder string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(placeholder) + `\b`).MatchString(exprs)
}
