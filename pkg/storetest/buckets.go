package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Buckets is what every rate-limit bucket store answers.
type Buckets interface {
	Take(context.Context, job.Take) (job.Taken, error)
	Give(context.Context, job.Give) error
	Raise(context.Context, job.Raise) error
	Bucket(context.Context, string) (job.Bucket, error)
}

// RunBuckets is the bucket stores' conformance suite: a full bucket lets
// one second's worth of calls through and then answers the wait until the
// next; tokens limit as requests do, and a take bigger than a second's
// worth waits for an idle bucket; a give returns tokens; a pause stops
// every take until its time, and a lower to what the provider said is
// left lets no more through; racing takers never get more than the
// limit allows; providers do not share buckets.
func RunBuckets(t *testing.T, s Buckets) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond) // the store's times are the callers'; any start will do
	take := func(provider string, l job.RateLimit, at time.Time, tokens int64) job.Taken {
		t.Helper()
		got, err := s.Take(ctx, job.Take{Provider: provider, Limit: l, Now: at, Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	perSecond2 := job.RateLimit{RequestsPerMinute: 120} // 2 a second, 500 ms apart
	for i := range 2 {
		if got := take("req", perSecond2, now, 0); !got.OK {
			t.Fatalf("take %d from a full bucket refused: %+v", i, got)
		}
	}
	if got := take("req", perSecond2, now, 0); got.OK || got.Wait != 500*time.Millisecond {
		t.Fatalf("a third take in the same instant: %+v, want a wait of 500ms", got)
	}
	if got := take("req", perSecond2, now.Add(500*time.Millisecond), 0); !got.OK {
		t.Fatalf("a take after the wait refused: %+v", got)
	}
	if got := take("other", perSecond2, now, 0); !got.OK {
		t.Fatalf("another provider's bucket was taken from: %+v", got)
	}

	tokens := job.RateLimit{TokensPerMinute: 60_000} // 1,000 a second
	if got := take("tok", tokens, now, 600); !got.OK {
		t.Fatalf("600 tokens from a full bucket: %+v", got)
	}
	if got := take("tok", tokens, now, 600); got.OK || got.Wait != 200*time.Millisecond {
		t.Fatalf("600 more: %+v, want a wait of 200ms", got)
	}
	if err := s.Give(ctx, job.Give{Provider: "tok", Limit: tokens, Tokens: 400}); err != nil {
		t.Fatal(err)
	}
	if got := take("tok", tokens, now, 600); !got.OK {
		t.Fatalf("600 more after 400 were given back: %+v", got)
	}
	if got := take("big", tokens, now, 3_000); !got.OK {
		t.Fatalf("a take of 3 s of tokens from an idle bucket: %+v", got)
	}
	if got := take("big", tokens, now.Add(time.Second), 3_000); got.OK || got.Wait != 2*time.Second {
		t.Fatalf("the next 3 s take a second later: %+v, want a wait of 2s", got)
	}

	if err := s.Raise(ctx, job.Pause("req", now.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := s.Raise(ctx, job.Pause("req", now.Add(time.Second))); err != nil {
		t.Fatal(err) // an earlier pause leaves the later one
	}
	if got := take("req", perSecond2, now.Add(30*time.Second), 0); got.OK || got.Wait < 30*time.Second {
		t.Fatalf("a take during a pause: %+v", got)
	}
	if b, err := s.Bucket(ctx, "req"); err != nil || !b.Requests.Equal(now.Add(time.Minute+job.Burst)) {
		t.Fatalf("the paused bucket %+v %v", b, err)
	}
	// The provider says 1 request is left: one take fits, the next waits.
	if err := s.Raise(ctx, perSecond2.Lower("low", now, 1, -1)); err != nil {
		t.Fatal(err)
	}
	if got := take("low", perSecond2, now, 0); !got.OK {
		t.Fatalf("the one take left: %+v", got)
	}
	if got := take("low", perSecond2, now, 0); got.OK {
		t.Fatalf("a take beyond what the provider said is left: %+v", got)
	}
	if b, _ := s.Bucket(ctx, "low"); !b.Tokens.IsZero() {
		t.Fatalf("a lower that said nothing of tokens moved them: %+v", b)
	}
	t.Run("racing takers never pass the limit", func(t *testing.T) { racingTakes(t, s, now) })
}

// racingTakes: 40 takers at once on a bucket of 10 a second get exactly
// 10.
func racingTakes(t *testing.T, s Buckets, now time.Time) {
	l := job.RateLimit{RequestsPerMinute: 600, TokensPerMinute: 600_000}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.Take(t.Context(), job.Take{Provider: "race", Limit: l, Now: now, Tokens: 100})
			if err != nil {
				t.Error(err)
			}
			if got.OK {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 {
		t.Fatalf("%d of 40 racing takes allowed, want 10", ok.Load())
	}
}
