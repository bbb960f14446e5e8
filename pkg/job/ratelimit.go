package job

import "time"

// RateLimit is what a provider key may be sent in a minute, shared by every
// worker (docs/architecture.md, "Provider rate limits"): requests and
// tokens (input plus output). Zero in a field means no limit of that kind.
type RateLimit struct {
	RequestsPerMinute int64
	TokensPerMinute   int64
}

// IsZero reports whether l limits nothing: a provider without limits is
// called without a take, as before limits existed.
func (l RateLimit) IsZero() bool { return l.RequestsPerMinute <= 0 && l.TokensPerMinute <= 0 }

// Burst is how far ahead of the steady rate a bucket lets calls go: one
// second's worth of the per-minute limits. Providers enforce a minute's
// limit over shorter periods (docs/architecture.md, "Provider rate
// limits"), so a whole minute sent at once would be refused.
const Burst = time.Second

// Bucket is one provider key's shared rate-limit state, kept as GCRA
// "theoretical arrival times", one per kind of limit: the time at which
// that kind's bucket will be empty again if nothing more is taken. A take
// moves a time forward by what it costs at the limit's rate; the bucket
// allows a take while the time stays within Burst (or, for a take bigger
// than Burst, once the time has passed). A zero time is a full bucket.
type Bucket struct {
	Provider string
	Requests time.Time
	Tokens   time.Time
}

// Take asks a provider's bucket for one call of Tokens tokens at Now.
type Take struct {
	Provider string
	Limit    RateLimit
	Now      time.Time
	Tokens   int64
}

// Cost is how far a take moves each of the bucket's times.
func (t Take) Cost() (requests, tokens time.Duration) {
	return t.Limit.requestCost(), t.Limit.tokenCost(t.Tokens)
}

func (l RateLimit) requestCost() time.Duration {
	if l.RequestsPerMinute <= 0 {
		return 0
	}
	return time.Minute / time.Duration(l.RequestsPerMinute)
}

// tokenCost is what n tokens cost in the tokens' time (0 with no limit).
func (l RateLimit) tokenCost(n int64) time.Duration {
	if l.TokensPerMinute <= 0 || n <= 0 {
		return 0
	}
	// µs first: a minute in ns times a large count overflows.
	return time.Duration(n*time.Minute.Microseconds()/l.TokensPerMinute) * time.Microsecond
}

// Latest is the latest a kind's time may be for a take of cost at now to
// be allowed: Burst ahead less the cost, and never before now.
func Latest(now time.Time, cost time.Duration) time.Time {
	return now.Add(max(Burst-cost, 0))
}

// Wait is how long the take must wait on b: zero when it is allowed now.
func (t Take) Wait(b Bucket) time.Duration {
	rc, tc := t.Cost()
	var w time.Duration
	if rc > 0 {
		w = max(w, b.Requests.Sub(Latest(t.Now, rc)))
	}
	if tc > 0 {
		w = max(w, b.Tokens.Sub(Latest(t.Now, tc)))
	}
	return max(w, 0)
}

// Apply returns b after an allowed take: each time moves forward by its
// cost from itself or, when it has passed, from now.
func (t Take) Apply(b Bucket) Bucket {
	rc, tc := t.Cost()
	if rc > 0 {
		b.Requests = laterOf(b.Requests, t.Now).Add(rc)
	}
	if tc > 0 {
		b.Tokens = laterOf(b.Tokens, t.Now).Add(tc)
	}
	return b
}

// Taken is a take's answer: allowed, or the wait until it would be.
type Taken struct {
	OK   bool
	Wait time.Duration
}

// Give returns tokens a take over-took (the worst case it took less what
// the call used) to the provider's bucket.
type Give struct {
	Provider string
	Limit    RateLimit
	Tokens   int64
}

// Cost is how far the give moves the tokens' time back.
func (g Give) Cost() time.Duration { return g.Limit.tokenCost(g.Tokens) }

// Apply returns b with the tokens given back.
func (g Give) Apply(b Bucket) Bucket {
	if c := g.Cost(); c > 0 && !b.Tokens.IsZero() {
		b.Tokens = b.Tokens.Add(-c)
	}
	return b
}

// Raise moves a provider's bucket times to at least Requests and Tokens
// (a zero time leaves that one as it is): how the provider's own word
// pauses or lowers the bucket for every worker at once. A raise never
// moves a time back, so a stale word can only make the bucket stricter.
type Raise struct {
	Provider string
	Requests time.Time
	Tokens   time.Time
}

// Apply returns b raised.
func (r Raise) Apply(b Bucket) Bucket {
	b.Requests, b.Tokens = laterOf(b.Requests, r.Requests), laterOf(b.Tokens, r.Tokens)
	return b
}

// Pause is the raise that stops every take from a provider's bucket until
// until: the provider said its limit is spent (a 429's retry-after). Both
// times move to until plus Burst, so no take is allowed before until.
func Pause(provider string, until time.Time) Raise {
	at := until.Add(Burst)
	return Raise{Provider: provider, Requests: at, Tokens: at}
}

// Lower is the raise that leaves a bucket under l no more than the
// provider said is left at now (requests and tokens; a negative count
// said nothing): each time moves to where exactly that many more takes
// fit. A count of a burst or more says nothing a bucket does not already
// allow, and raises nothing.
func (l RateLimit) Lower(provider string, now time.Time, requests, tokens int64) Raise {
	r := Raise{Provider: provider}
	if rc := l.requestCost(); rc > 0 && requests >= 0 {
		r.Requests = ahead(now, Burst-time.Duration(requests)*rc)
	}
	if tokens >= 0 && l.TokensPerMinute > 0 {
		r.Tokens = ahead(now, Burst-l.tokenCost(tokens))
	}
	return r
}

// ahead is now+d when that is after now, else zero: a time at or before
// now already allows every take, so raising to it would be a write that
// changes nothing.
func ahead(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
