package dynamodb_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// broken answers every call with err, or, when err is nil, reads with item.
type broken struct {
	err  error
	item map[string]types.AttributeValue
}

func (b broken) PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	return nil, b.err
}

func (b broken) GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	if b.err != nil {
		return nil, b.err
	}
	return &ddb.GetItemOutput{Item: b.item}, nil
}

func (b broken) Query(context.Context, *ddb.QueryInput, ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	return nil, b.err
}

func (b broken) Scan(context.Context, *ddb.ScanInput, ...func(*ddb.Options)) (*ddb.ScanOutput, error) {
	return nil, b.err
}

func (b broken) UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	if b.err != nil {
		return nil, b.err
	}
	return &ddb.UpdateItemOutput{Attributes: b.item}, nil
}

// calls are every store method, for error translation tests.
func calls(st *dynamodb.Store) map[string]func(context.Context) error {
	id, now := job.NewID("t", "k"), base
	return map[string]func(context.Context) error{
		"create": func(ctx context.Context) error { _, err := st.Create(ctx, queuedJob("k")); return err },
		"get":    func(ctx context.Context) error { _, err := st.Get(ctx, id); return err },
		"claim": func(ctx context.Context) error {
			_, err := st.Claim(ctx, job.Claim{ID: id, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute)})
			return err
		},
		"heartbeat": func(ctx context.Context) error {
			_, err := st.Heartbeat(ctx, job.Heartbeat{ID: id, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute)})
			return err
		},
		"succeed": func(ctx context.Context) error {
			_, err := st.Succeed(ctx, job.Succeed{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1}, Result: json.RawMessage(`{}`)})
			return err
		},
		"release": func(ctx context.Context) error {
			_, err := st.Release(ctx, job.Release{ID: id, Owner: "w", Now: now, Settlement: job.Settlement{Cost: 1}, Class: job.Timeout})
			return err
		},
		"end": func(ctx context.Context) error {
			_, err := st.End(ctx, job.End{ID: id, Now: now, Class: job.DeadlineExceeded})
			return err
		},
		"cancel": func(ctx context.Context) error {
			_, err := st.Cancel(ctx, job.Cancel{ID: id, Tenant: "t", Now: now})
			return err
		},
	}
}

// TestDriverErrorsAreUnavailable: throttling, a network failure or any
// other SDK error is Unavailable, with a message that names no AWS error;
// the cause is kept for logs.
func TestDriverErrorsAreUnavailable(t *testing.T) {
	for name, cause := range map[string]error{
		"throughput exceeded": &types.ProvisionedThroughputExceededException{Message: aws.String("The level of configured provisioned throughput for the table was exceeded")},
		"throttling":          &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate of requests exceeds the allowed throughput."},
		"network":             errors.New("dial tcp 127.0.0.1:4566: connect: connection refused"),
		"context":             context.DeadlineExceeded,
	} {
		for call, f := range calls(dynamodb.New(broken{err: cause}, "jobs", settings.Defaults())) {
			err := f(t.Context())
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeUnavailable {
				t.Errorf("%s on %s: %v, want Unavailable", name, call, err)
				continue
			}
			if e.Message != "the job store is unavailable" || strings.Contains(e.Message, "xception") {
				t.Errorf("%s on %s: message %q", name, call, e.Message)
			}
			if !errors.Is(err, cause) {
				t.Errorf("%s on %s: the cause is lost: %v", name, call, err)
			}
		}
	}
}

// TestItemOverTheSizeLimitIsTooLarge: DynamoDB refuses an item over 400 KB
// with a ValidationException ("Item size has exceeded the maximum allowed
// size", "Item size to update has exceeded the maximum allowed size":
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items).
// No retry can store it, so it is the domain's too_large, never
// unavailable, and the message names no AWS error.
func TestItemOverTheSizeLimitIsTooLarge(t *testing.T) {
	for call, msg := range map[string]string{
		"create":  "Item size has exceeded the maximum allowed size",
		"succeed": "Item size to update has exceeded the maximum allowed size",
	} {
		cause := &smithy.GenericAPIError{Code: "ValidationException", Message: msg}
		err := calls(dynamodb.New(broken{err: cause}, "jobs", settings.Defaults()))[call](t.Context())
		var e *job.Error
		if !errors.As(err, &e) || e.Code != job.CodeTooLarge {
			t.Errorf("%s: %v, want too_large", call, err)
			continue
		}
		if strings.Contains(e.Message, "xception") || !errors.Is(err, cause) {
			t.Errorf("%s: message %q, cause kept %v", call, e.Message, errors.Is(err, cause))
		}
	}
}

// TestUndecodableItemIsInternal: an item that is not a job is Internal,
// never retried as Unavailable.
func TestUndecodableItemIsInternal(t *testing.T) {
	for name, item := range map[string]map[string]types.AttributeValue{
		"number that is not one": {"id": &types.AttributeValueMemberS{Value: "job_x"}, "state": &types.AttributeValueMemberS{Value: "queued"},
			"attempts": &types.AttributeValueMemberN{Value: "one"}},
		"no state":      {"id": &types.AttributeValueMemberS{Value: "job_x"}},
		"unknown state": {"id": &types.AttributeValueMemberS{Value: "job_x"}, "state": &types.AttributeValueMemberS{Value: "paused"}},
		// Read as absent, damaged lanes would allow every lane.
		"lanes not a list": {"id": &types.AttributeValueMemberS{Value: "job_x"}, "state": &types.AttributeValueMemberS{Value: "queued"},
			"lanes": &types.AttributeValueMemberSS{Value: []string{"flex"}}},
		"a lane not a string": {"id": &types.AttributeValueMemberS{Value: "job_x"}, "state": &types.AttributeValueMemberS{Value: "queued"},
			"lanes": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "flex"}, &types.AttributeValueMemberN{Value: "1"}}}},
	} {
		st := dynamodb.New(broken{item: item}, "jobs", settings.Defaults())
		for _, call := range []string{"get", "claim", "heartbeat"} {
			if err := calls(st)[call](t.Context()); job.ErrorCode(err) != job.CodeInternal {
				t.Errorf("%s on %s: %v, want Internal", name, call, err)
			}
		}
	}
}
