package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/model"
)

// TestACallOnASplitKeyGivesBackToItsPart: a key of 400 calls a second
// is four parts of 60,000 tokens a minute each; the take takes the
// rung's worst case (21 tokens) from one part, the call used 5, and the
// 16 left go back to that part: its tokens' time has moved by 5 ms at
// its 60,000 a minute, and no other part was taken from or given to.
func TestACallOnASplitKeyGivesBackToItsPart(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	})
	buckets := memstore.NewBuckets()
	l := job.RateLimit{RequestsPerMinute: 4 * job.PartRequests, TokensPerMinute: 240_000}
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

// TestAnAnswersWordOfWhatIsLeftLowersOnlyItsPart: the provider says 10
// requests are left of the key; the answer lowers the part its call took
// from and writes no other part (every answer writing every part made
// part 0 the key's hot item again: TestWalls).
func TestAnAnswersWordOfWhatIsLeftLowersOnlyItsPart(t *testing.T) {
	f := setup(t, func(context.Context, model.Request, int) (model.Response, error) {
		return model.Response{Output: "hi", Usage: model.Usage{InputTokens: 3, OutputTokens: 2},
			Left: model.Left{Requests: 10, HasRequests: true}}, nil
	})
	buckets := memstore.NewBuckets()
	l := job.RateLimit{RequestsPerMinute: 4 * job.PartRequests, TokensPerMinute: 240_000}
	f.rateLimited(l, buckets)
	before := time.Now()
	f.deliver(body(f.create("k1", nil).ID))
	lowered, written := 0, 0
	for i := range 4 {
		bk, _ := buckets.Bucket(t.Context(), job.PartKey("p", i))
		if bk.Tokens.IsZero() && bk.Requests.IsZero() {
			continue
		}
		written++
		// 10 left of the key: the part fits its quarter, so its time is
		// a burst less 10 of the key's requests ahead of the answer (a
		// take alone leaves it a burst less one request behind).
		if bk.Requests.After(before) {
			lowered++
		}
	}
	if written != 1 || lowered != 1 {
		t.Fatalf("%d parts written, %d lowered; want the one the call took from, lowered", written, lowered)
	}
}
