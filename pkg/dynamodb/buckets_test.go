package dynamodb_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// TestALearnedLimitReachesAWorkerThatSawTheBucketBefore: two workers'
// stores over one buckets table. The second saw the bucket knowing no
// limit; the first learns one from an answer. The second's next takes,
// guessed at no limit, are refused by the item's condition and made again
// at the learned limit: two a second, then a wait.
func TestALearnedLimitReachesAWorkerThatSawTheBucketBefore(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	a, b := dynamodb.NewBuckets(c, table), dynamodb.NewBuckets(c, table)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := job.RateLimit{Grain: job.GrainModel}.Bucket("openai", "gpt-x")
	if got, err := b.Take(t.Context(), job.Take{Provider: key, Now: now}); err != nil || !got.OK {
		t.Fatalf("a take knowing no limit: %+v %v", got, err)
	}
	if err := a.Learn(t.Context(), job.Learn{Provider: key, Limit: job.RateLimit{RequestsPerMinute: 120}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{0, 0, 500 * time.Millisecond} {
		got, err := b.Take(t.Context(), job.Take{Provider: key, Now: now})
		if err != nil || got.OK != (want == 0) || got.Wait != want {
			t.Fatalf("take %d of the worker that saw no limit: %+v %v, want a wait of %s", i, got, err, want)
		}
	}
	// The entry's own bucket, beside the model's, is another.
	if got, err := a.Take(t.Context(), job.Take{Provider: "openai", Limit: job.RateLimit{RequestsPerMinute: 60}, Now: now}); err != nil || !got.OK {
		t.Fatalf("the entry's bucket: %+v %v", got, err)
	}
	if bk, err := a.Bucket(t.Context(), "openai"); err != nil || !bk.Learned.IsZero() {
		t.Fatalf("the entry's bucket learned the model's limit: %+v %v", bk, err)
	}
}

// TestThrottleCutsRacingOnlyCutOnce: five workers throttled together cut
// the learned limit once, not five times.
func TestThrottleCutsRacingOnlyCutOnce(t *testing.T) {
	c, table := sideTable(t, "buckets", dynamodb.CreateBucketsTable)
	now := time.Now().UTC().Truncate(time.Millisecond)
	first := dynamodb.NewBuckets(c, table)
	if err := first.Learn(t.Context(), job.Learn{Provider: "bedrock", Step: job.Cut, Now: now}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := first.Learn(t.Context(), job.Learn{Provider: "bedrock", Step: job.Grow, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(job.CutEvery)
	done := make(chan error)
	for range 5 {
		go func() {
			done <- dynamodb.NewBuckets(c, table).Learn(t.Context(), job.Learn{Provider: "bedrock", Step: job.Cut, Now: later})
		}()
	}
	for range 5 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if b, err := first.Bucket(t.Context(), "bedrock"); err != nil || b.Learned.RequestsPerMinute != (job.ThrottledStart+20)/2 {
		t.Fatalf("after five racing cuts: %+v %v, want %d a minute", b.Learned, err, (job.ThrottledStart+20)/2)
	}
}
