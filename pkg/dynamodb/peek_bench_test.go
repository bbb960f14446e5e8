package dynamodb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// countingClient counts the response bytes the SDK reads.
type countingClient struct {
	inner aws.HTTPClient
	bytes *atomic.Int64
}

func (c countingClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.inner.Do(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// BenchmarkPollRead compares what a poll reads of a job whose input is
// 1 KiB or 200 KiB (below the 256 KiB create limit): the whole item with a
// strongly consistent Get (before) and the projected, eventually
// consistent Peek (docs/api.md, "Polls"). resp-B/op is the
// response bytes the SDK read; the read units are not measured here
// (kumo reports none): GetItem's are counted on the whole item either way,
// halved for the peek by its consistency.
//
//	go test ./pkg/dynamodb -run '^$' -bench PollRead -count 5
func BenchmarkPollRead(b *testing.B) {
	var read atomic.Int64
	cfg := awstest.Config(b, nil)
	cfg.HTTPClient = countingClient{inner: cfg.HTTPClient, bytes: &read}
	c := awsclient.DynamoDB(cfg)
	table := awstest.Prefix(b)
	ctx := context.Background()
	if err := dynamodb.CreateTable(ctx, c, table, settings.Defaults()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	s := dynamodb.New(c, table, settings.Defaults())
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, size := range []int{1 << 10, 200 << 10} {
		input, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("x", size)}}})
		key := fmt.Sprintf("in-%d", size)
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, InputHash: "sha256:" + strings.Repeat("0", 64), Model: "default",
			Input: input, State: job.Succeeded, MaxAttempts: 3, Attempts: 1, Budget: 1e9, Result: json.RawMessage(`{"output":"done"}`),
			Deadline: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now, Version: 3}
		if _, err := s.Create(ctx, j); err != nil {
			b.Fatal(err)
		}
		for _, r := range []struct {
			name string
			fn   func(context.Context, string) (job.Job, error)
		}{{"get", s.Get}, {"peek", s.Peek}} {
			b.Run(fmt.Sprintf("input=%dKiB/%s", size>>10, r.name), func(b *testing.B) {
				read.Store(0)
				for b.Loop() {
					if _, err := r.fn(ctx, j.ID); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(read.Load())/float64(b.N), "resp-B/op")
			})
		}
	}
}
