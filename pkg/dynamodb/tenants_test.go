package dynamodb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// TestTenantsRotateWebhookKeys: on the emulator, a tenant with no item is
// at version 1; a rotation moves it to 2 keeping 1 as previous; concurrent
// rotations each make a version of their own.
func TestTenantsRotateWebhookKeys(t *testing.T) {
	c := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t) + "-tenants"
	if err := dynamodb.CreateTenantsTable(t.Context(), c, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	s := dynamodb.NewTenants(c, table)
	at := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)

	k, err := s.WebhookKeys(t.Context(), "tenant-a")
	if err != nil || k != job.FirstWebhookKeys("tenant-a") {
		t.Fatalf("a tenant never rotated: %+v, %v", k, err)
	}
	r, err := s.RotateWebhookKeys(t.Context(), "tenant-a", 1, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := job.FirstWebhookKeys("tenant-a").Rotate(at); r != want {
		t.Fatalf("rotated = %+v, want %+v", r, want)
	}
	if got, err := s.WebhookKeys(t.Context(), "tenant-a"); err != nil || got != r {
		t.Fatalf("read after the rotation = %+v, %v; want %+v", got, err, r)
	}
	if other, _ := s.WebhookKeys(t.Context(), "tenant-b"); other.Current != 1 {
		t.Fatalf("another tenant moved: %+v", other)
	}
	var wg sync.WaitGroup
	seen := make(chan job.WebhookKeys, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k, err := s.RotateWebhookKeys(context.Background(), "tenant-a", 2, at); err == nil {
				seen <- k
			} else {
				t.Errorf("a concurrent rotation from version 2: %v", err)
			}
		}()
	}
	wg.Wait()
	close(seen)
	for k := range seen {
		if k.Current != 3 || k.Previous != 2 {
			t.Errorf("a concurrent rotation from version 2 answered %+v, want version 3 for all", k)
		}
	}
	if _, err := s.RotateWebhookKeys(t.Context(), "tenant-a", 1, at); job.ErrorCode(err) != job.CodeConflict {
		t.Fatalf("a rotation from version 1 at version 3: err = %v, want conflict", err)
	}
}
