package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
)

// TestACallOnASplitKeyGivesBackToItsPart: a key of 1,000 calls a second
// is four parts of 60,000 tokens a minute each; the take takes the
// rung's worst case (21 tokens) from one part, the call used 5, and the
// 16 left go back to that part: its tokens' time has moved by 5 ms at
// its 60,000 a minute, and no other part was taken from or given to.
func TestACallOnASplitKeyGivesBackToItsPart(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	})
	buckets := memstore.NewBuckets()
	l := job.RateLimit{RequestsPerMinute: 60_000, TokensPerMinute: 240_000}
	if n := l.Parts(job.PartRequests); n != 4 {
		t.Fatalf("%d parts, want 4", n)
	}
	f.rateLimited(l, buckets)
	before := time.Now()
	f.deliver(body(f.create("k1", nil).ID))
	after := time.Now()
	taken := 0
	for i := range 4 {
		bk, _ := buckets.Bucket(t.Context(), job.PartKey("p", i))
		if bk.Tokens.IsZero() {
			continue
		}
		taken++
		if bk.Tokens.Before(before.Add(5*time.Millisecond)) || bk.Tokens.After(after.Add(5*time.Millisecond)) {
			t.Fatalf("part %d's tokens' time %s after the start, want 5ms after the take", i, bk.Tokens.Sub(before))
		}
	}
	if taken != 1 {
		t.Fatalf("%d parts taken from, want 1", taken)
	}
}
