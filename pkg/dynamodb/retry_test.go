package dynamodb_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// lossy applies every write but loses the answer of the first n, as a
// connection reset after DynamoDB committed would; the caller retries.
type lossy struct {
	*ddb.Client
	lose atomic.Int32
}

func (l *lossy) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	out, err := l.Client.UpdateItem(ctx, in, o...)
	if err == nil && l.lose.Add(-1) >= 0 {
		return nil, errors.New("connection reset by peer")
	}
	return out, err
}

// retrying retries a write that failed in transit, as the SDK does.
func retrying[T any](f func() (T, error)) (T, error) {
	v, err := f()
	if job.ErrorCode(err) == job.CodeUnavailable {
		return f()
	}
	return v, err
}

// oneShard is the default layout with the failure index on one shard.
func oneShard() settings.Settings {
	s := settings.Defaults()
	s.FailureShards = 1
	return s
}

func TestRetriedFinishIsRecognisedNotChargedTwice(t *testing.T) {
	ctx := context.Background()
	c, table := newTable(t)
	l := &lossy{Client: c}
	st := dynamodb.New(l, table, oneShard())
	now := job.Millis(time.Now())
	j := job.Job{ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:x", Model: "default",
		Input: json.RawMessage(`{}`), State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: now.Add(time.Hour),
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "w", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	l.lose.Store(1)
	got, err := retrying(func() (job.Job, error) {
		return st.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "w", Now: now.Add(2 * time.Second), Settlement: job.Settlement{Cost: 1000}, Result: json.RawMessage(`{"o":1}`)})
	})
	if err != nil || got.State != job.Succeeded || got.Cost != 1000 {
		t.Fatalf("retried success: %+v %v (cost must be added once, and the success reported)", got, err)
	}

	// The cost-only add of a refused finish is recognised the same way.
	k := j
	k.ID, k.RequestKey = job.NewID("t", "k2"), "k2"
	if _, err := st.Create(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: k.ID, Owner: "old", Now: now.Add(time.Second), LeaseUntil: now.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	dead, err := st.Get(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteOff(ctx, job.NewWriteOff(dead, now.Add(3*time.Second))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: k.ID, Owner: "new", Now: now.Add(3 * time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	l.lose.Store(1) // loses the answer of the unconditional cost add
	_, err = retrying(func() (job.Job, error) {
		return st.Release(ctx, job.Release{ID: k.ID, Owner: "old", Now: now.Add(4 * time.Second), Settlement: job.Settlement{Cost: 500}, Class: job.Timeout})
	})
	if cur, ok := job.ConflictJob(err); !ok || cur.Cost != 500 {
		t.Fatalf("retried cost add: %+v %v, want Conflict with cost 500", cur, err)
	}
}

// TestRetriedFinishAfterAnotherWriterSettlesOnce: a finish whose answer was
// lost is retried only after another worker has claimed and finished the
// job; the retry must still be recognised (cost and hold settled once).
func TestRetriedFinishAfterAnotherWriterSettlesOnce(t *testing.T) {
	ctx := context.Background()
	c, table := newTable(t)
	l := &lossy{Client: c}
	st := dynamodb.New(l, table, oneShard())
	now := job.Millis(time.Now())
	j := job.Job{ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:x", Model: "default",
		Input: json.RawMessage(`{}`), State: job.Queued, MaxAttempts: 3, Budget: 1000, Reserve: 50, Deadline: now.Add(time.Hour),
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "b", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	release := job.Release{ID: j.ID, Owner: "b", Now: now.Add(2 * time.Second), Settlement: job.Settlement{Cost: 40, Held: 50}, Class: job.RateLimited}
	l.lose.Store(1)
	if _, err := st.Release(ctx, release); job.ErrorCode(err) != job.CodeUnavailable {
		t.Fatalf("first try: %v, want its answer lost", err)
	}
	// Worker c claims and finishes before b's retry.
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "c", Now: now.Add(3 * time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Release(ctx, job.Release{ID: j.ID, Owner: "c", Now: now.Add(4 * time.Second), Settlement: job.Settlement{Cost: 7, Held: 50}, Class: job.RateLimited}); err != nil {
		t.Fatal(err)
	}
	release.Now = now.Add(5 * time.Second)
	if _, err := st.Release(ctx, release); err != nil {
		t.Fatalf("b's retry: %v, want it recognised as applied", err)
	}
	got, err := st.Get(ctx, j.ID)
	if err != nil || got.Cost != 47 || got.Held != 0 || got.Remaining() != 1000-47 {
		t.Fatalf("record %+v %v: want cost 47, nothing held, 953 left (each attempt settled once)", got, err)
	}
}
