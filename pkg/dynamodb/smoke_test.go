package dynamodb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	c := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t)
	if err := dynamodb.CreateTable(ctx, c, table, settings.Defaults()); err != nil {
		t.Fatal(err)
	}
	if err := dynamodb.CreateTable(ctx, c, table, settings.Defaults()); err != nil {
		t.Fatal(err)
	}
	st := dynamodb.New(c, table, 4)
	now := job.Millis(time.Now())
	j := job.Job{ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:x", Model: "default", Input: []byte(`{"a":1}`),
		State: job.Queued, MaxAttempts: 2, Budget: job.Cents(1), Deadline: now.Add(time.Hour), Version: 1, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, j); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("dup create: %v", err)
	}
	got, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "a", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute), Reserve: 5})
	t.Logf("claim: %+v %v", got, err)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Claim(ctx, job.Claim{ID: j.ID, Owner: "b", Now: now.Add(2 * time.Second), LeaseUntil: now.Add(time.Minute)})
	t.Logf("second claim: %v", err)
	got, err = st.Heartbeat(ctx, job.Heartbeat{ID: j.ID, Owner: "a", Now: now.Add(-time.Hour), LeaseUntil: now.Add(2 * time.Minute), Progress: 0.5})
	t.Logf("skewed heartbeat: %+v %v", got, err)
	got, err = st.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "b", Now: now.Add(3 * time.Second), Cost: 7, Result: []byte(`{}`)})
	t.Logf("stale succeed: %+v %v", got, err)
	got, err = st.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "a", Now: now.Add(3 * time.Second), Cost: 9, Result: []byte(`{"o":1}`), Model: "m", ExpiresAt: now.Add(time.Hour)})
	t.Logf("succeed: %+v %v", got, err)
	if got.Cost != 16 || got.State != job.Succeeded {
		t.Fatal("bad")
	}
}
