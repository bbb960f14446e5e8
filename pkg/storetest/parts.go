package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// splitLimit is a key of 400 calls a second (of 100 tokens), which the stores split
// into four parts at their default job.PartRequests.
var splitLimit = job.RateLimit{RequestsPerMinute: 4 * job.PartRequests, TokensPerMinute: 400 * job.PartRequests}

// runParts: a key split into parts holds its whole limit, no more and
// within 5% no less, under 64 concurrent takers; a give goes back to the
// part its take came from; a limit learned for the key and the
// provider's word (a pause, what is left) reach every part.
func runParts(t *testing.T, s Buckets, now time.Time) {
	if n := splitLimit.Parts(job.PartRequests); n != 4 {
		t.Fatalf("the split key has %d parts at the default, want 4", n)
	}
	t.Run("64 takers get the key's limit from its parts", func(t *testing.T) {
		got := tickedTakes(t, s, job.Take{Provider: "split", Limit: splitLimit, Now: now, Tokens: 100}, 50)
		within5(t, got, 50, "declared")
	})
	t.Run("a give goes back to its part", func(t *testing.T) { givenBack(t, s, now) })
	t.Run("a learned limit holds on every part", func(t *testing.T) {
		if err := s.Learn(t.Context(), job.Learn{Provider: "split-learned", Limit: splitLimit, Now: now}); err != nil {
			t.Fatal(err)
		}
		got := tickedTakes(t, s, job.Take{Provider: "split-learned", Now: now, Tokens: 100}, 25)
		within5(t, got, 25, "learned")
		wordOfTheProvider(t, s, "split-learned", now.Add(time.Minute))
	})
}

// tick is the time between the simulated instants of tickedTakes: 20
// calls of the split key's.
const tick = 50 * time.Millisecond

// tickedTakes has 64 takers take tk at once at each of ticks instants
// tick apart from its Now (3.2 times the split key's 20 a tick) and
// answers the takes allowed.
func tickedTakes(t *testing.T, s Buckets, tk job.Take, ticks int) int64 {
	t.Helper()
	var ok atomic.Int64
	for k := range ticks {
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				at := tk
				at.Now = tk.Now.Add(time.Duration(k) * tick)
				got, err := s.Take(t.Context(), at)
				if err != nil {
					t.Error(err)
				}
				if got.OK {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
	}
	return ok.Load()
}

// within5 holds got, the takes allowed over ticks, within 5% of the split
// key's limit over them: a full bucket's second, and 20 a tick after.
func within5(t *testing.T, got int64, ticks int, what string) {
	t.Helper()
	perSecond := splitLimit.RequestsPerMinute / 60
	want := perSecond*int64(job.Burst/time.Second) + int64(ticks)*perSecond*int64(tick)/int64(time.Second)
	if float64(got) > 1.05*float64(want) || float64(got) < 0.95*float64(want) {
		t.Fatalf("%d takes allowed over %d ticks at the %s limit of %d a second, want %d within 5%%", got, ticks, what, perSecond, want)
	}
	t.Logf("%d takes allowed, the key's limit %d (%.1f%%)", got, want, 100*float64(got)/float64(want))
}

// givenBack: four takes of a part's whole second of tokens spend the
// split key (the first three find room at once, since each tries three
// parts); a give of one take's tokens goes back to its part, which
// is then the only one a take of as many finds room in.
func givenBack(t *testing.T, s Buckets, now time.Time) {
	ctx := t.Context()
	const key = "split-give"
	perPart := splitLimit.TokensPerMinute / 60 / 4 // a part's second of tokens
	var first job.Taken
	// A take tries three parts of four, so the last part's may take a few.
	for granted, i := 0, 0; granted < 4; i++ {
		got, err := s.Take(ctx, job.Take{Provider: key, Limit: splitLimit, Now: now, Tokens: perPart})
		if err != nil || i == 40 || (!got.OK && granted < 3) {
			t.Fatalf("take %d of a part's second of tokens, %d allowed: %+v %v", i, granted, got, err)
		}
		if got.OK && first.Part == 0 {
			first = got // a part other than the key's own item, where a give that lost its part would go
		}
		if got.OK {
			granted++
		}
	}
	if first.Limit != splitLimit {
		t.Fatalf("a take from a part priced at %+v, want the whole key's %+v (a worker's local share divides it)", first.Limit, splitLimit)
	}
	if got, err := s.Take(ctx, job.Take{Provider: key, Limit: splitLimit, Now: now, Tokens: perPart}); err != nil || got.OK {
		t.Fatalf("a fifth take from the spent key: %+v %v", got, err)
	}
	if err := s.Give(ctx, job.Give{Provider: key, Limit: first.Limit, Tokens: perPart, Part: first.Part}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		b, err := s.Bucket(ctx, job.PartKey(key, i))
		want := now.Add(time.Second)
		if i == first.Part {
			want = now
		}
		if err != nil || !b.Tokens.Equal(want) {
			t.Fatalf("part %d after a give to part %d: tokens at %s %v, want %s", i, first.Part, b.Tokens, err, want)
		}
	}
	// Each take tries three parts of four: in 20, one finds the part given to.
	for i := range 20 {
		got, err := s.Take(ctx, job.Take{Provider: key, Limit: splitLimit, Now: now, Tokens: perPart})
		if err != nil {
			t.Fatal(err)
		}
		if got.OK {
			if got.Part != first.Part {
				t.Fatalf("take %d after the give found room in part %d, the give went to %d", i, got.Part, first.Part)
			}
			return
		}
	}
	t.Fatalf("no take found the tokens given back to part %d", first.Part)
}

// wordOfTheProvider: a pause of the split key stops a take on every
// part; once it is over, an answer's word of what is left of the whole
// key (100 requests) lowers only its own call's part, and lowered each,
// the parts let through those 100 together.
func wordOfTheProvider(t *testing.T, s Buckets, key string, now time.Time) {
	ctx := t.Context()
	until := now.Add(10 * time.Second)
	if err := s.Raise(ctx, job.Pause(key, until)); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if b, err := s.Bucket(ctx, job.PartKey(key, i)); err != nil || b.Requests.Before(until) {
			t.Fatalf("part %d after a pause until %s: %+v %v", i, until, b, err)
		}
	}
	for i := range 20 {
		if got, err := s.Take(ctx, job.Take{Provider: key, Now: now.Add(5 * time.Second), Tokens: 100}); err != nil || got.OK || got.Wait < 5*time.Second {
			t.Fatalf("take %d during the pause: %+v %v", i, got, err)
		}
	}
	later := until.Add(time.Minute) // every part idle
	// An answer lowers the part its call took from, and no other: each
	// part's own answers lower it, so here one answer per part.
	for p := range 4 {
		r := splitLimit.Lower(key, later, 100, -1)
		r.Part = p
		if err := s.Raise(ctx, r); err != nil {
			t.Fatal(err)
		}
		for i := p + 1; i < 4; i++ {
			if b, err := s.Bucket(ctx, job.PartKey(key, i)); err != nil || b.Requests.After(later) {
				t.Fatalf("part %d after a lower of part %d: %+v %v", i, p, b, err)
			}
		}
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				got, err := s.Take(ctx, job.Take{Provider: key, Now: later, Tokens: 100})
				if err != nil {
					t.Error(err)
				}
				if got.OK {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := ok.Load(); got < 95 || got > 105 {
		t.Fatalf("%d takes after the provider said 100 are left of the key, want 100 within 5%%", got)
	}
}
