package job

import "time"

// RateLimit is what a provider key may be sent in a minute, shared by every
// worker (docs/ratelimits.md, "Provider rate limits"): requests and
// tokens (input plus output). Zero in a field means no limit of that kind
// is known: a declared limit sets it, else the key's bucket learns it from
// the provider's answers (Bucket.Learned).
type RateLimit struct {
	RequestsPerMinute int64
	TokensPerMinute   int64
	// Grain is which calls share one bucket, at the grain the provider
	// limits them: "" has a bucket only when a limit is declared (a rung
	// not built from a keyed provider entry: the local fake, a test).
	Grain Grain
	// Throttles marks a provider whose answers state no limits (Bedrock):
	// its bucket learns a requests-per-minute from its throttles instead
	// (Learn's Grow and Cut).
	Throttles bool
}

// Grain is how a provider key's calls are divided among buckets.
type Grain string

const (
	// GrainEntry: one bucket per provider entry (Anthropic, Bedrock).
	GrainEntry Grain = "entry"
	// GrainModel: one bucket per provider entry and model: OpenAI limits
	// each model of a key separately, so a 429 on one model must not
	// pause the others.
	GrainModel Grain = "model"
)

// modelBucket starts the key of a per-model bucket. The buckets table
// also holds tenants' slots ("tenant#<kind>#<shard>#<tenant>") and batch records
// ("batch#<id>", "batches#open"); a provider entry's name holds no '#',
// so "model#<entry>#<model>" is neither an entry's key nor theirs.
const modelBucket = "model#"

// Bucket is the key of the bucket a call of model on provider entry takes
// from, "" when it takes from none.
func (l RateLimit) Bucket(provider, model string) string {
	switch {
	case l.Grain == GrainModel:
		return modelBucket + provider + "#" + model
	case l.Grain == GrainEntry || !l.IsZero():
		return provider
	}
	return ""
}

// IsZero reports whether l limits nothing of either kind.
func (l RateLimit) IsZero() bool { return l.RequestsPerMinute <= 0 && l.TokensPerMinute <= 0 }

// Or is l with each kind it does not limit taken from o: a declared limit
// overrides what the bucket learned, kind by kind.
func (l RateLimit) Or(o RateLimit) RateLimit {
	if l.RequestsPerMinute <= 0 {
		l.RequestsPerMinute = o.RequestsPerMinute
	}
	if l.TokensPerMinute <= 0 {
		l.TokensPerMinute = o.TokensPerMinute
	}
	return l
}

// Burst is how far ahead of the steady rate a bucket lets calls go: one
// second's worth of the per-minute limits. Providers enforce a minute's
// limit over shorter periods (docs/ratelimits.md, "Provider rate
// limits"), so a whole minute sent at once would be refused.
const Burst = time.Second

// Bucket is one provider key's shared rate-limit state, kept as GCRA
// "theoretical arrival times", one per kind of limit: the time at which
// that kind's bucket will be empty again if nothing more is taken. A take
// moves a time forward by what it costs at the limit's rate; the bucket
// allows a take while the time stays within Burst (or, for a take bigger
// than Burst, once the time has passed). A zero time is a full bucket.
type Bucket struct {
	Provider string // the bucket's key (RateLimit.Bucket)
	Requests time.Time
	Tokens   time.Time
	// Learned is the key's limit as the provider's answers stated it (or,
	// for a provider that states none, as its throttles taught it), shared
	// by every worker; Cut is when a throttle last cut it (Learn).
	Learned RateLimit
	Cut     time.Time
}

// Take asks a provider's bucket for one call of Tokens tokens at Now.
// Limit is the declared limit; a kind it leaves zero is taken at the
// bucket's learned limit (On), and a take that knows no limit of either
// kind moves nothing but still waits out a pause.
type Take struct {
	Provider string
	Limit    RateLimit
	Now      time.Time
	Tokens   int64
}

// On is t as it applies to b: its limit completed by b's learned one.
func (t Take) On(b Bucket) Take {
	t.Limit = t.Limit.Or(b.Learned)
	return t
}

// Cost is how far a take moves each of the bucket's times, at its own
// Limit (resolve it with On first).
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
// A kind the take does not limit still holds it while a pause or a lower
// has moved that kind's time beyond a burst ahead: the provider's word
// binds a key whatever is known of its limit.
func (t Take) Wait(b Bucket) time.Duration {
	rc, tc := t.On(b).Cost()
	w := max(b.Requests.Sub(Latest(t.Now, rc)), b.Tokens.Sub(Latest(t.Now, tc)))
	return max(w, 0)
}

// Apply returns b after an allowed take: each time moves forward by its
// cost from itself or, when it has passed, from now.
func (t Take) Apply(b Bucket) Bucket {
	rc, tc := t.On(b).Cost()
	if rc > 0 {
		b.Requests = laterOf(b.Requests, t.Now).Add(rc)
	}
	if tc > 0 {
		b.Tokens = laterOf(b.Tokens, t.Now).Add(tc)
	}
	return b
}

// Taken is a take's answer: allowed, at the limit it was priced at (its
// declared one completed by the learned one), or the wait until it would
// be.
type Taken struct {
	OK    bool
	Limit RateLimit
	Wait  time.Duration
	// Part is the part of the key's bucket the take came from (PartKey),
	// where its give must go back.
	Part int
}

// Give returns tokens a take over-took (the worst case it took less what
// the call used) to the provider's bucket, at the limit the take was
// priced at (Taken.Limit): a limit learned since must not price tokens
// the take never took. Part is the part of the bucket the take came
// from (Taken.Part): tokens given to another part would lend one part
// what the other took.
type Give struct {
	Provider string
	Limit    RateLimit
	Tokens   int64
	Part     int
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
	// Part is the part of a split key's bucket (PartKey) a lower is for:
	// the part the answering call took from. Each part is lowered by its
	// own calls' answers, at the same times the whole key's count gives
	// (a part's share of what is left, at its share of the limit, is the
	// same wait), so an answer is one write rather than one per part,
	// which made part 0 the key's hot item again. EveryPart is a pause:
	// the provider said the whole key is spent.
	Part      int
	EveryPart bool
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
	return Raise{Provider: provider, Requests: at, Tokens: at, EveryPart: true}
}

// Lower is the raise that leaves a bucket under l no more than the
// provider said is left at now (requests and tokens; a negative count
// said nothing): each time moves to where exactly that many more takes
// fit; of a key split into n parts, to where each part (the raise's Part)
// fits its n-th of them. A count of a burst or more says nothing a bucket does not already
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

// Learn records on a key's bucket what a call's answer taught of the
// key's limit, for every worker to take at (docs/ratelimits.md,
// "Provider rate limits"). An answer's headers state the limit (Limit:
// each kind stated replaces the learned one); a provider that states none
// (RateLimit.Throttles) is learned additive-increase, multiplicative-
// decrease: each answer Grows the learned requests a minute by one, each
// throttle Cuts it in half (seeding it at ThrottledStart when nothing was
// learned), at most once a CutEvery, since the calls in flight when the
// key ran out are throttled together.
type Learn struct {
	Provider string
	Limit    RateLimit
	Step     Step
	Now      time.Time
}

// Step is the throttle-learned limit's move on one call's outcome.
type Step int

const (
	NoStep Step = iota
	Grow        // an answer: one request a minute more
	Cut         // a throttle: half
)

const (
	// ThrottledStart is the requests a minute a key that states no limits
	// is held to from its first throttle: a guess low enough for the
	// least of Bedrock's default on-demand quotas to be found in a few
	// halvings, from which each answer grows it (a learned rate at most
	// doubles in a minute).
	ThrottledStart = 60
	// ThrottledMax bounds the growth: nothing learned from answers alone
	// is believed beyond it.
	ThrottledMax = 1_000_000
	// CutEvery is how often a throttle may cut: the calls in flight when
	// the key ran out are refused together, and are one signal, not many.
	CutEvery = 5 * time.Second
)

// Apply returns b with l learned, and whether that changed anything (a
// store writes nothing that would not).
func (l Learn) Apply(b Bucket) (Bucket, bool) {
	was := b
	if l.Limit.RequestsPerMinute > 0 {
		b.Learned.RequestsPerMinute = l.Limit.RequestsPerMinute
	}
	if l.Limit.TokensPerMinute > 0 {
		b.Learned.TokensPerMinute = l.Limit.TokensPerMinute
	}
	rpm := b.Learned.RequestsPerMinute
	switch {
	case l.Step == Grow && rpm > 0 && rpm < ThrottledMax:
		b.Learned.RequestsPerMinute++
	case l.Step == Cut && l.Now.Sub(b.Cut) >= CutEvery:
		b.Learned.RequestsPerMinute, b.Cut = Halved(rpm), l.Now
	}
	return b, b != was
}

// Halved is what a throttle cuts a learned requests a minute to: half,
// never below one; ThrottledStart when nothing was learned.
func Halved(rpm int64) int64 {
	if rpm <= 0 {
		return ThrottledStart
	}
	return max(rpm/2, 1)
}
