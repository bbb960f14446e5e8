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
	Learn(context.Context, job.Learn) error
	Bucket(context.Context, string) (job.Bucket, error)
}

// RunBuckets is the bucket stores' conformance suite: a full bucket lets
// one second's worth of calls through and then answers the wait until the
// next; tokens limit as requests do, and a take bigger than a second's
// worth waits for an idle bucket; a give returns tokens; a pause stops
// every take until its time, and a lower to what the provider said is
// left lets no more through; racing takers never get more than the
// limit allows; providers do not share buckets. Then the learned limits
// (learnedLimits), the throttle-learned one (throttleLearned) and a key
// of many calls a second, split into parts (runParts).
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

	pausesAndLowers(t, s, now, take)
	t.Run("racing takers never pass the limit", func(t *testing.T) {
		racingTakes(t, s, now, "race", job.RateLimit{RequestsPerMinute: 600, TokensPerMinute: 600_000})
	})
	t.Run("learned limits", func(t *testing.T) { learnedLimits(t, s, now) })
	t.Run("racing takers never pass a learned limit", func(t *testing.T) {
		if err := s.Learn(t.Context(), job.Learn{Provider: "race-learned", Limit: job.RateLimit{RequestsPerMinute: 600, TokensPerMinute: 600_000}}); err != nil {
			t.Fatal(err)
		}
		racingTakes(t, s, now, "race-learned", job.RateLimit{})
	})
	t.Run("throttle-learned limits", func(t *testing.T) { throttleLearned(t, s, now) })
	t.Run("a key split into parts", func(t *testing.T) { runParts(t, s, now) })
}

// pausesAndLowers: a pause stops every take until its time (an earlier
// one leaves a later), and a lower to what the provider said is left
// lets no more through.
func pausesAndLowers(t *testing.T, s Buckets, now time.Time, take func(string, job.RateLimit, time.Time, int64) job.Taken) {
	t.Helper()
	ctx := t.Context()
	perSecond2 := job.RateLimit{RequestsPerMinute: 120}
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
}

// learnedLimits: a bucket that knows no limit lets every take through
// but a paused one; a limit the provider stated limits the takes that
// declare none, kind by kind, a declared one overrides it, and the last
// stated replaces it; a give at a learned limit returns tokens.
func learnedLimits(t *testing.T, s Buckets, now time.Time) {
	ctx := t.Context()
	take := func(provider string, l job.RateLimit, at time.Time, tokens int64) job.Taken {
		t.Helper()
		got, err := s.Take(ctx, job.Take{Provider: provider, Limit: l, Now: at, Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	learn := func(l job.Learn) {
		t.Helper()
		if err := s.Learn(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	none := job.RateLimit{}
	for i := range 5 {
		if got := take("free", none, now, 1_000); !got.OK {
			t.Fatalf("take %d knowing no limit: %+v", i, got)
		}
	}
	if err := s.Raise(ctx, job.Pause("free", now.Add(10*time.Second))); err != nil {
		t.Fatal(err)
	}
	if got := take("free", none, now, 0); got.OK || got.Wait != 10*time.Second {
		t.Fatalf("a take knowing no limit on a paused bucket: %+v, want a wait of 10s", got)
	}
	if got := take("free", none, now.Add(10*time.Second), 0); !got.OK {
		t.Fatalf("the same take once the pause is over: %+v", got)
	}

	learn(job.Learn{Provider: "learnt", Limit: job.RateLimit{RequestsPerMinute: 120}})
	if b, err := s.Bucket(ctx, "learnt"); err != nil || b.Learned != (job.RateLimit{RequestsPerMinute: 120}) {
		t.Fatalf("the learned bucket: %+v %v", b, err)
	}
	for i := range 2 {
		if got := take("learnt", none, now, 100); !got.OK {
			t.Fatalf("take %d at the learned 2 a second: %+v", i, got)
		}
	}
	if got := take("learnt", none, now, 100); got.OK || got.Wait != 500*time.Millisecond {
		t.Fatalf("a third at the learned 2 a second: %+v, want a wait of 500ms", got)
	}
	// A declared limit overrides the learned one: 600 a minute is 100 ms.
	if got := take("learnt", job.RateLimit{RequestsPerMinute: 600}, now.Add(100*time.Millisecond), 0); !got.OK {
		t.Fatalf("a take at a declared limit above the learned one: %+v", got)
	}
	// A new word replaces the old; a word of tokens leaves requests alone.
	learn(job.Learn{Provider: "learnt", Limit: job.RateLimit{RequestsPerMinute: 600}})
	learn(job.Learn{Provider: "learnt", Limit: job.RateLimit{TokensPerMinute: 60_000}})
	learn(job.Learn{Provider: "learnt", Limit: job.RateLimit{TokensPerMinute: 60_000}}) // the same again changes nothing
	if b, _ := s.Bucket(ctx, "learnt"); b.Learned != (job.RateLimit{RequestsPerMinute: 600, TokensPerMinute: 60_000}) {
		t.Fatalf("learned %+v, want 600 requests and 60,000 tokens a minute", b.Learned)
	}
	later := now.Add(time.Minute) // an idle bucket
	priced := take("learnt", none, later, 600)
	if !priced.OK || priced.Limit != (job.RateLimit{RequestsPerMinute: 600, TokensPerMinute: 60_000}) {
		t.Fatalf("600 tokens at the learned 1,000 a second: %+v, want it priced at the learned limit", priced)
	}
	if got := take("learnt", none, later, 600); got.OK || got.Wait != 200*time.Millisecond {
		t.Fatalf("600 more in the same instant: %+v, want a wait of 200ms", got)
	}
	if err := s.Give(ctx, job.Give{Provider: "learnt", Limit: priced.Limit, Tokens: 400}); err != nil {
		t.Fatal(err)
	}
	if got := take("learnt", none, later, 600); !got.OK {
		t.Fatalf("600 more after 400 were given back at the learned limit: %+v", got)
	}
}

// throttleLearned: a key that states no limits learns one from its
// throttles: the first cuts to job.ThrottledStart, another within
// job.CutEvery cuts nothing (the same running out), answers grow it by
// one each, and a later throttle halves it.
func throttleLearned(t *testing.T, s Buckets, now time.Time) {
	ctx := t.Context()
	learned := func(want int64) {
		t.Helper()
		if b, err := s.Bucket(ctx, "bedrock"); err != nil || b.Learned.RequestsPerMinute != want {
			t.Fatalf("learned %+v %v, want %d requests a minute", b.Learned, err, want)
		}
	}
	step := func(st job.Step, at time.Time) {
		t.Helper()
		if err := s.Learn(ctx, job.Learn{Provider: "bedrock", Step: st, Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	step(job.Grow, now)
	learned(0) // an answer before any throttle teaches nothing
	step(job.Cut, now)
	learned(job.ThrottledStart)
	step(job.Cut, now.Add(time.Second))
	learned(job.ThrottledStart)
	for range 4 {
		step(job.Grow, now.Add(time.Second))
	}
	learned(job.ThrottledStart + 4)
	step(job.Cut, now.Add(job.CutEvery))
	learned((job.ThrottledStart + 4) / 2)
	// 32 a minute: a take costs 1.875 s, more than a burst, and waits
	// for the idle bucket.
	at := now.Add(time.Hour)
	for i, want := range []time.Duration{0, time.Minute / 32} {
		got, err := s.Take(ctx, job.Take{Provider: "bedrock", Now: at})
		if err != nil || got.OK != (want == 0) || got.Wait != want {
			t.Fatalf("take %d at the learned 32 a minute: %+v %v, want a wait of %s", i, got, err, want)
		}
	}
}

// racingTakes: 40 takers at once on a bucket of 10 a second (declared
// as l, or learned) get exactly 10.
func racingTakes(t *testing.T, s Buckets, now time.Time, provider string, l job.RateLimit) {
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.Take(t.Context(), job.Take{Provider: provider, Limit: l, Now: now, Tokens: 100})
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
