package model

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// maxPause bounds any pause a provider asks for: the headers come from
// the wire, and a hostile or buggy one must not stop a key for days. A
// limit still spent after an hour says so again on the next call.
const maxPause = time.Hour

// PauseOf is how long the provider's rate-limit headers in h ask every
// caller of the key to wait, as of now (when the headers arrived). It is
// the longest of what they say, because calling before the latest of the
// key's limits is refilled only earns another refusal: a retry-after
// (seconds, an HTTP date, or milliseconds), and the reset of each limit
// whose remaining count is spent. Headers it cannot read say nothing
// (zero), never a guess, and a pause is capped at maxPause.
func PauseOf(h http.Header, now time.Time) time.Duration {
	p := max(retryAfter(h.Get("Retry-After"), now), scaled(h.Get("Retry-After-Ms"), time.Millisecond))
	for _, kind := range []string{"requests", "tokens"} {
		if spent(h.Get("X-Ratelimit-Remaining-" + kind)) {
			if d, err := time.ParseDuration(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + kind))); err == nil {
				p = max(p, d)
			}
		}
	}
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if spent(h.Get("Anthropic-Ratelimit-" + kind + "-Remaining")) {
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("Anthropic-Ratelimit-"+kind+"-Reset"))); err == nil {
				p = max(p, t.Sub(now))
			}
		}
	}
	return min(max(p, 0), maxPause)
}

// retryAfter reads both forms a retry-after may take; a date in the past
// asks for no wait.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	// A count too large for 64 bits reads as the largest: it is capped.
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return time.Duration(min(n, uint64(maxPause/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// scaled is v units. It is computed in floating point and capped before
// it becomes a Duration, so a huge count cannot overflow into a negative
// (no) pause; a fraction is accepted, as a millisecond count may have one.
func scaled(v string, unit time.Duration) time.Duration {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(n >= 0) { // NaN fails the comparison too
		return 0
	}
	d := n * float64(unit)
	if d >= float64(maxPause) {
		return maxPause
	}
	return time.Duration(d)
}

// spent reports whether a remaining count says nothing is left; a count
// that cannot be read says nothing, so no reset is believed on its word.
func spent(v string) bool {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return err == nil && n <= 0
}

// Left is what a provider's rate-limit headers said of its key's limits
// when it answered: what is left of each, and the limits themselves. The
// worker lowers the key's shared bucket to what is left (RateLimit.Lower):
// a bucket that believes more is left than the provider says would earn
// refusals; and it records the limits on the bucket (job.Learn), so that
// a key whose limits nobody declared is taken from at the provider's own.
// A zero Left says nothing.
type Left struct {
	Requests, Tokens       int64
	HasRequests, HasTokens bool // which counts the headers gave
	// Limit is the key's limits a minute as the headers stated them (a
	// zero kind: not stated).
	Limit job.RateLimit
}

// LeftOf reads what h says: OpenAI's x-ratelimit-remaining-* and
// Anthropic's anthropic-ratelimit-*-remaining (the least of its token
// limits, since a bucket counts input and output tokens together), and
// the limits (LimitOf).
func LeftOf(h http.Header) Left {
	var l Left
	least := func(cur int64, has bool, v string) (int64, bool) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			return cur, has
		case has:
			return min(cur, max(n, 0)), true
		}
		return max(n, 0), true
	}
	l.Requests, l.HasRequests = least(l.Requests, l.HasRequests, h.Get("X-Ratelimit-Remaining-Requests"))
	l.Requests, l.HasRequests = least(l.Requests, l.HasRequests, h.Get("Anthropic-Ratelimit-Requests-Remaining"))
	l.Tokens, l.HasTokens = least(l.Tokens, l.HasTokens, h.Get("X-Ratelimit-Remaining-Tokens"))
	for _, kind := range []string{"tokens", "input-tokens", "output-tokens"} {
		l.Tokens, l.HasTokens = least(l.Tokens, l.HasTokens, h.Get("Anthropic-Ratelimit-"+kind+"-Remaining"))
	}
	l.Limit = LimitOf(h)
	return l
}

// LimitOf reads the key's limits a minute that h states, the
// provider's own word on every answer:
//
//   - OpenAI's x-ratelimit-limit-requests and x-ratelimit-limit-tokens,
//     "the maximum number of requests (tokens) that are permitted before
//     exhausting the rate limit", a minute's (platform.openai.com/docs/
//     guides/rate-limits, "Rate limits in headers"); tokens count the
//     prompt and the output cap, as a take does.
//   - Anthropic's anthropic-ratelimit-requests-limit and, for tokens, its
//     anthropic-ratelimit-tokens-limit, input and output together, as a
//     bucket counts them; else the least of its -input-tokens-limit and
//     -output-tokens-limit (docs.anthropic.com/en/api/rate-limits,
//     "Response headers").
//
// A count that is not a whole number above zero says nothing.
func LimitOf(h http.Header) job.RateLimit {
	var l job.RateLimit
	first := func(names ...string) int64 {
		for _, name := range names {
			if n, err := strconv.ParseInt(strings.TrimSpace(h.Get(name)), 10, 64); err == nil && n > 0 {
				return n
			}
		}
		return 0
	}
	l.RequestsPerMinute = first("X-Ratelimit-Limit-Requests", "Anthropic-Ratelimit-Requests-Limit")
	l.TokensPerMinute = first("X-Ratelimit-Limit-Tokens", "Anthropic-Ratelimit-Tokens-Limit")
	if l.TokensPerMinute == 0 {
		in, out := first("Anthropic-Ratelimit-Input-Tokens-Limit"), first("Anthropic-Ratelimit-Output-Tokens-Limit")
		switch {
		case in > 0 && out > 0:
			l.TokensPerMinute = min(in, out)
		default:
			l.TokensPerMinute = max(in, out)
		}
	}
	return l
}

// Heard puts on a call's result what its headers h, arriving at at, said
// of the key's limits: on an error, the pause they asked for less the
// time since (a stream may outlast a short reset, and the worker counts
// the pause from the return); on an answer, what is left of each limit.
// Every HTTP provider passes its result through it.
func Heard(resp Response, err error, h http.Header, at time.Time) (Response, error) {
	var me *Error
	if errors.As(err, &me) {
		me.Pause = max(PauseOf(h, at)-time.Since(at), 0)
	} else if err == nil {
		resp.Left = LeftOf(h)
	}
	return resp, err
}
