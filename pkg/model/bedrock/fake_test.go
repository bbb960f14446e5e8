package bedrock_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// Against the fake, as Bedrock answers, a Converse call, whole or
// streamed, of a Claude 4 model or an Amazon Nova one, is billed every
// input token, the cache's reads and writes named apart, at exactly what
// Bedrock bills; and the tier that served it is read from the answer, a
// priority call served at the default tier included.
func TestAgainstTheFake(t *testing.T) {
	// Each model's rates per token (the test's; the ratios are Claude's
	// on Bedrock, reads a tenth of the input price and writes 1.25 times
	// it, and any others for Nova: the mapping must hold for any).
	models := map[string]job.Price{
		"anthropic.claude-sonnet-4-5-20250929-v1:0": {InputPerToken: 300, OutputPerToken: 1500, CachedInputPerToken: 30, CacheWritePerToken: 375},
		"us.amazon.nova-pro-v1:0":                   {InputPerToken: 80, OutputPerToken: 320, CachedInputPerToken: 20, CacheWritePerToken: 80},
	}
	lanes := []struct {
		asked     job.Lane
		downgrade bool
		served    job.Lane
	}{
		{"", false, job.Standard},
		{job.Standard, false, job.Standard},
		{job.Flex, false, job.Flex},
		{job.Priority, false, job.Priority},
		{job.Priority, true, job.Standard},
	}
	for id, price := range models {
		for _, l := range lanes {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s lane=%q downgrade=%v stream=%v", id, l.asked, l.downgrade, stream), func(t *testing.T) {
					s := bedrocktest.New(nil)
					s.CacheRead, s.CacheWrite, s.Downgrade = 2048, 512, l.downgrade
					srv := httptest.NewServer(s.Handler())
					defer srv.Close()
					c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL, Model: id, Stream: stream})
					if err != nil {
						t.Fatal(err)
					}
					r := request()
					r.Lane, r.MaxTokens = l.asked, 64
					got, err := c.Generate(context.Background(), r)
					if err != nil {
						t.Fatalf("Generate: %v", err)
					}
					b := modeltest.OnlyBill(t, s.Billed())
					modeltest.CacheApart(t, got.Usage, modeltest.Counts{Input: b.Input, CacheRead: 2048, CacheWrite: 512, Output: b.Output})
					bill := b.Bill(int64(price.InputPerToken), int64(price.CachedInputPerToken), int64(price.CacheWritePerToken), int64(price.OutputPerToken))
					if cost := got.Usage.Cost(price); int64(cost) != bill {
						t.Fatalf("cost %d, Bedrock bills %d", cost, bill)
					}
					if got.Served != l.served {
						t.Fatalf("served %q, want %q (the fake said %q)", got.Served, l.served, b.Tier)
					}
				})
			}
		}
	}
}
