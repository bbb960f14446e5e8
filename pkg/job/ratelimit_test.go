package job_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestABucketIsKeptAtTheGrainTheProviderLimits: OpenAI's per entry and
// model, the others' per entry, the fake's only with declared limits; a
// per-model key can be neither an entry's (no '#') nor a tenant's slots
// ("tenant#") nor a batch's ("batch#", "batches#").
func TestABucketIsKeptAtTheGrainTheProviderLimits(t *testing.T) {
	for _, tt := range []struct {
		l    job.RateLimit
		want string
	}{
		{job.RateLimit{Grain: job.GrainModel}, "model#oa#gpt-4o"},
		{job.RateLimit{Grain: job.GrainEntry}, "oa"},
		{job.RateLimit{Grain: job.GrainEntry, Throttles: true}, "oa"},
		{job.RateLimit{RequestsPerMinute: 60}, "oa"},
		{job.RateLimit{}, ""},
	} {
		if got := tt.l.Bucket("oa", "gpt-4o"); got != tt.want {
			t.Errorf("%+v: bucket %q, want %q", tt.l, got, tt.want)
		}
	}
	a, b := job.RateLimit{Grain: job.GrainModel}.Bucket("oa", "gpt-4o"), job.RateLimit{Grain: job.GrainModel}.Bucket("oa", "gpt-4o-mini")
	if a == b {
		t.Fatalf("two models share bucket %q", a)
	}
}

// TestADeclaredLimitOverridesTheLearnedOneKindByKind: a take declaring
// requests only is priced at the learned tokens.
func TestADeclaredLimitOverridesTheLearnedOneKindByKind(t *testing.T) {
	b := job.Bucket{Learned: job.RateLimit{RequestsPerMinute: 60, TokensPerMinute: 6000}}
	tk := job.Take{Limit: job.RateLimit{RequestsPerMinute: 600}, Tokens: 100}
	if got := tk.On(b).Limit; got.RequestsPerMinute != 600 || got.TokensPerMinute != 6000 {
		t.Fatalf("priced at %+v, want 600 declared requests and 6,000 learned tokens", got)
	}
	if rc, tc := tk.On(b).Cost(); rc != 100*time.Millisecond || tc != time.Second {
		t.Fatalf("costs %s and %s, want 100ms and 1s", rc, tc)
	}
}

// TestATakeKnowingNoLimitWaitsOutAPause: nothing known of the key's limit
// moves nothing, but the provider's pause still holds every take.
func TestATakeKnowingNoLimitWaitsOutAPause(t *testing.T) {
	now := time.Now()
	tk := job.Take{Now: now, Tokens: 500}
	if w := tk.Wait(job.Bucket{}); w != 0 {
		t.Fatalf("a full bucket: wait %s", w)
	}
	if b := tk.Apply(job.Bucket{}); !b.Requests.IsZero() || !b.Tokens.IsZero() {
		t.Fatalf("a take knowing no limit moved the bucket: %+v", b)
	}
	paused := job.Pause("oa", now.Add(3*time.Second)).Apply(job.Bucket{})
	if w := tk.Wait(paused); w != 3*time.Second {
		t.Fatalf("a paused bucket: wait %s, want 3s", w)
	}
}

// TestTheThrottleLearnedLimit: additive increase, multiplicative
// decrease, one cut a CutEvery; an answer's stated limit replaces the
// learned one, and a learn that changes nothing says so.
func TestTheThrottleLearnedLimit(t *testing.T) {
	now := time.Now()
	var b job.Bucket
	step := func(s job.Step, at time.Time) bool {
		var changed bool
		b, changed = job.Learn{Step: s, Now: at}.Apply(b)
		return changed
	}
	if step(job.Grow, now) {
		t.Fatal("an answer before any throttle grew a limit nobody learned")
	}
	if !step(job.Cut, now) || b.Learned.RequestsPerMinute != job.ThrottledStart {
		t.Fatalf("the first throttle: %+v, want %d", b.Learned, job.ThrottledStart)
	}
	if step(job.Cut, now.Add(job.CutEvery-time.Millisecond)) {
		t.Fatal("a second throttle within CutEvery cut again")
	}
	step(job.Grow, now)
	step(job.Cut, now.Add(job.CutEvery))
	if want := int64(job.ThrottledStart+1) / 2; b.Learned.RequestsPerMinute != want {
		t.Fatalf("after a grow and a cut: %d, want %d", b.Learned.RequestsPerMinute, want)
	}
	for range 100 {
		step(job.Cut, b.Cut.Add(job.CutEvery))
	}
	if b.Learned.RequestsPerMinute != 1 {
		t.Fatalf("cut to %d, want never below 1", b.Learned.RequestsPerMinute)
	}
	b2, changed := job.Learn{Limit: job.RateLimit{TokensPerMinute: 9000}}.Apply(b)
	if !changed || b2.Learned != (job.RateLimit{RequestsPerMinute: 1, TokensPerMinute: 9000}) {
		t.Fatalf("a stated token limit: %+v", b2.Learned)
	}
	if _, changed := (job.Learn{Limit: job.RateLimit{TokensPerMinute: 9000}}).Apply(b2); changed {
		t.Fatal("learning the same limit again changed the bucket")
	}
}
