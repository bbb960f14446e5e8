package job_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestAKeyIsSplitByItsRequestsAMinute: a part carries at most
// job.PartRequests requests a minute, so a key has its requests over
// that, rounded up, at most job.MaxParts; a key that limits no requests,
// or whose limit is learned from throttles, keeps one; each part holds
// its share of both kinds.
func TestAKeyIsSplitByItsRequestsAMinute(t *testing.T) {
	for _, tt := range []struct {
		l    job.RateLimit
		want int
	}{
		{job.RateLimit{RequestsPerMinute: 500}, 1},
		{job.RateLimit{RequestsPerMinute: job.PartRequests}, 1},
		{job.RateLimit{RequestsPerMinute: job.PartRequests + 1}, 2},
		{job.RateLimit{RequestsPerMinute: 30_000, TokensPerMinute: 150_000_000}, 5},
		{job.RateLimit{RequestsPerMinute: 120_000}, 20}, // 2,000 calls a second
		{job.RateLimit{RequestsPerMinute: 100_000_000}, job.MaxParts},
		{job.RateLimit{TokensPerMinute: 150_000_000}, 1},
		{job.RateLimit{RequestsPerMinute: 120_000, Throttles: true}, 1},
	} {
		if got := tt.l.Parts(job.PartRequests); got != tt.want {
			t.Errorf("%+v: %d parts, want %d", tt.l, got, tt.want)
		}
	}
	l := job.RateLimit{RequestsPerMinute: 30_000, TokensPerMinute: 150_000_000}
	if got := l.Part(2); got.RequestsPerMinute != 15_000 || got.TokensPerMinute != 75_000_000 {
		t.Fatalf("one of two parts of %+v: %+v", l, got)
	}
	if got := l.Part(1); got != l {
		t.Fatalf("the one part of %+v: %+v", l, got)
	}
}

// TestAPartsKeyIsNoOtherItemsKey: part 0 is the key's own item (a key of
// one part is the item it always was); the others start "part#", which
// no entry, model bucket, tenant slot or batch record does, and name
// their key and part.
func TestAPartsKeyIsNoOtherItemsKey(t *testing.T) {
	model := job.RateLimit{Grain: job.GrainModel}.Bucket("oa", "gpt-4o")
	for _, key := range []string{"oa", model} {
		if got := job.PartKey(key, 0); got != key {
			t.Fatalf("part 0 of %q: %q", key, got)
		}
		for _, i := range []int{1, 7, 63} {
			item := job.PartKey(key, i)
			if k, p := job.PartOf(item); k != key || p != i {
				t.Fatalf("%q: key %q part %d, want %q %d", item, k, p, key, i)
			}
		}
	}
	if got := job.PartKey("tenant", 2); got == "tenant#2" {
		t.Fatalf("a part's key is a tenant's slots: %q", got)
	}
}
