package model_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// header is a response's headers, from name, value pairs written the way
// the providers write them (lower case): net/http canonicalises them.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestPauseOf(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"no headers", header(), 0},
		{"headers of an unlimited key", header("content-type", "application/json", "x-ratelimit-limit-requests", "500"), 0},

		// retry-after, in each of its forms.
		{"retry-after seconds", header("retry-after", "7"), 7 * time.Second},
		{"retry-after zero", header("retry-after", "0"), 0},
		{"retry-after date", header("retry-after", date(30*time.Second)), 30 * time.Second},
		{"retry-after date passed", header("retry-after", date(-30*time.Second)), 0},
		{"retry-after-ms", header("retry-after-ms", "1500"), 1500 * time.Millisecond},
		{"retry-after-ms fraction", header("retry-after-ms", "12.5"), 12500 * time.Microsecond},
		{"retry-after garbage", header("retry-after", "soon"), 0},
		{"retry-after negative", header("retry-after", "-5"), 0},
		{"retry-after fraction is not seconds", header("retry-after", "1.5"), 0},
		{"retry-after-ms garbage", header("retry-after-ms", "NaN"), 0},
		{"retry-after-ms negative", header("retry-after-ms", "-1500"), 0},

		// OpenAI: a spent limit's reset, a Go-like duration.
		{"openai requests spent", header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s"), time.Second},
		{"openai tokens spent", header("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"), 6 * time.Minute},
		{"openai milliseconds", header("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "12ms"), 12 * time.Millisecond},
		{"openai fraction", header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "0.5s"), 500 * time.Millisecond},
		{"openai minutes and fraction", header("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1m30.951s"),
			90*time.Second + 951*time.Millisecond},
		{"openai remaining left", header("x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-tokens", "6m0s"), 0},
		{"openai remaining absent", header("x-ratelimit-reset-requests", "6m0s"), 0},
		{"openai remaining garbage", header("x-ratelimit-remaining-requests", "none", "x-ratelimit-reset-requests", "6m0s"), 0},
		{"openai reset garbage", header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "soon"), 0},
		{"openai reset negative", header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-5s"), 0},
		{"openai other kind's reset", header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-tokens", "6m0s"), 0},

		// Anthropic: a spent limit's reset, an RFC 3339 time.
		{"anthropic requests spent", header("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", at(20*time.Second)), 20 * time.Second},
		{"anthropic tokens spent", header("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(21*time.Second)), 21 * time.Second},
		{"anthropic input tokens spent", header("anthropic-ratelimit-input-tokens-remaining", "0", "anthropic-ratelimit-input-tokens-reset", at(22*time.Second)), 22 * time.Second},
		{"anthropic output tokens spent", header("anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", at(23*time.Second)), 23 * time.Second},
		{"anthropic fraction", header("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(2500*time.Millisecond)), 2500 * time.Millisecond},
		{"anthropic offset", header("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset",
			now.Add(40*time.Second).In(time.FixedZone("", -7*3600)).Format(time.RFC3339)), 40 * time.Second},
		{"anthropic remaining left", header("anthropic-ratelimit-tokens-remaining", "1200", "anthropic-ratelimit-tokens-reset", at(20*time.Second)), 0},
		{"anthropic reset passed", header("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", at(-20*time.Second)), 0},
		{"anthropic reset garbage", header("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "in a bit"), 0},
		{"anthropic reset not RFC 3339", header("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", date(20*time.Second)), 0},
		{"anthropic remaining garbage", header("anthropic-ratelimit-requests-remaining", "", "anthropic-ratelimit-requests-reset", at(20*time.Second)), 0},

		// The longest wins, whichever header says it.
		{"longest is a reset", header("retry-after", "7", "retry-after-ms", "9000",
			"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "20s",
			"anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", at(40*time.Second)), 40 * time.Second},
		{"longest is retry-after", header("retry-after", "60",
			"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20s",
			"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", at(40*time.Second)), time.Minute},
		{"longest is retry-after-ms", header("retry-after", "7", "retry-after-ms", "9000"), 9 * time.Second},
		{"unspent limit's longer reset ignored", header("retry-after", "7",
			"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2s",
			"x-ratelimit-remaining-tokens", "10", "x-ratelimit-reset-tokens", "6m0s"), 7 * time.Second},
		{"garbage beside a good header", header("retry-after", "soon", "retry-after-ms", "x",
			"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "3s"), 3 * time.Second},

		// No header stops a key for more than an hour.
		{"cap retry-after", header("retry-after", "86400"), time.Hour},
		{"cap retry-after beyond 64 bits", header("retry-after", "99999999999999999999999999"), time.Hour},
		{"cap retry-after date", header("retry-after", date(72*time.Hour)), time.Hour},
		{"cap retry-after-ms", header("retry-after-ms", "1e300"), time.Hour},
		{"cap retry-after-ms infinite", header("retry-after-ms", "+Inf"), time.Hour},
		{"cap openai reset", header("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "8760h"), time.Hour},
		{"cap anthropic reset", header("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "2999-01-01T00:00:00Z"), time.Hour},
		{"just under the cap", header("retry-after", "3599"), 3599 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.PauseOf(tt.h, now); got != tt.want {
				t.Fatalf("PauseOf(%v) = %v, want %v", tt.h, got, tt.want)
			}
		})
	}
}

// TestLeftOf: what an answer's headers say is left, the least of
// Anthropic's token limits, nothing from headers that cannot be read.
func TestLeftOf(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want model.Left
	}{
		{"no headers", header(), model.Left{}},
		{"openai", header("x-ratelimit-remaining-requests", "59", "x-ratelimit-remaining-tokens", "149000"),
			model.Left{Requests: 59, Tokens: 149000, HasRequests: true, HasTokens: true}},
		{"anthropic, the least token limit", header("anthropic-ratelimit-requests-remaining", "3", "anthropic-ratelimit-tokens-remaining", "9000",
			"anthropic-ratelimit-input-tokens-remaining", "7000", "anthropic-ratelimit-output-tokens-remaining", "800"),
			model.Left{Requests: 3, Tokens: 800, HasRequests: true, HasTokens: true}},
		{"negative reads as spent", header("x-ratelimit-remaining-requests", "-2"), model.Left{Requests: 0, HasRequests: true}},
		{"garbage says nothing", header("x-ratelimit-remaining-requests", "lots", "anthropic-ratelimit-tokens-remaining", "1e9"), model.Left{}},
	}
	for _, tt := range tests {
		if got := model.LeftOf(tt.h); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestLimitOf: the key's limits an answer states, as each provider names
// them (platform.openai.com/docs/guides/rate-limits; docs.anthropic.com/
// en/api/rate-limits): OpenAI's requests and tokens; Anthropic's requests
// and its combined tokens, else the least of its input and output ones;
// nothing from headers that cannot be read. LeftOf carries them.
func TestLimitOf(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want job.RateLimit
	}{
		{"no headers", header(), job.RateLimit{}},
		{"openai", header("x-ratelimit-limit-requests", "5000", "x-ratelimit-limit-tokens", "160000",
			"x-ratelimit-remaining-requests", "4999"), job.RateLimit{RequestsPerMinute: 5000, TokensPerMinute: 160000}},
		{"anthropic, combined tokens", header("anthropic-ratelimit-requests-limit", "1000", "anthropic-ratelimit-tokens-limit", "96000",
			"anthropic-ratelimit-input-tokens-limit", "80000", "anthropic-ratelimit-output-tokens-limit", "16000"),
			job.RateLimit{RequestsPerMinute: 1000, TokensPerMinute: 96000}},
		{"anthropic, input and output only", header("anthropic-ratelimit-input-tokens-limit", "80000", "anthropic-ratelimit-output-tokens-limit", "16000"),
			job.RateLimit{TokensPerMinute: 16000}},
		{"anthropic, output only", header("anthropic-ratelimit-output-tokens-limit", "16000"), job.RateLimit{TokensPerMinute: 16000}},
		{"garbage, zero and negative say nothing", header("x-ratelimit-limit-requests", "lots", "x-ratelimit-limit-tokens", "0",
			"anthropic-ratelimit-requests-limit", "-5"), job.RateLimit{}},
	}
	for _, tt := range tests {
		if got := model.LimitOf(tt.h); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		if got := model.LeftOf(tt.h).Limit; got != tt.want {
			t.Errorf("%s: LeftOf's limit %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
