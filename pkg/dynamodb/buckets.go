package dynamodb

import (
	"context"
	"strconv"
	"sync"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The buckets table holds each provider key's rate-limit bucket
// (job.Bucket): one item per part of a key (job.RateLimit.Bucket: a
// provider entry, or "model#<entry>#<model>" for a per-model one; a key
// of many calls a second has parts "part#<i>#<key>" beside its own item,
// job.PartKey, each holding its share of the limit), its two GCRA times
// in microseconds since the epoch and the limits learned from the
// provider's answers (the whole key's, on every part). A take is one
// conditional UpdateItem on one part. DynamoDB's conditions
// cannot do arithmetic on attributes, so the store states the take's rule
// for each time as one of two cases it guesses from the last item it saw:
// a time that has passed is SET to now plus the cost (its condition: it
// has passed), and a time still ahead is moved by an ADD of the cost (its
// condition: it is ahead, within the burst less the cost). A take at a
// learned limit also states the limit it was priced at (its condition:
// the item still holds it), and a take that knows no limit only checks
// that no pause holds the key. Concurrent takes in the busy case never
// refuse each other: ADD commutes, and the learned limits rarely change.
// A refused write returns the item (or is read), and either the take must
// wait or the guess was wrong and is made again.
const (
	bProvider = "provider"
	bRequests = "req_tat_us"
	bTokens   = "tok_tat_us"
	// The learned limits (job.Bucket.Learned), the last cut of a
	// throttle-learned one, and the time of a take that moved nothing.
	bLearnedRPM = "learned_rpm"
	bLearnedTPM = "learned_tpm"
	bCut        = "cut_us"
	bTaken      = "taken_us"
	// takeTries bounds the guesses of one take; a take that loses them all
	// to other workers is answered with a short wait.
	takeTries = 6
	lostWait  = 20 * time.Millisecond
)

// BucketClient is the part of the DynamoDB API the buckets store calls.
type BucketClient interface {
	GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
}

// Buckets is the buckets table.
type Buckets struct {
	t    side
	per  int64 // the requests a minute one part of a key carries (job.RateLimit.Parts)
	mu   sync.Mutex
	seen map[string]job.Bucket // the last item seen of each part (job.PartKey)
	// learned is each key's learned limit on the last of its parts seen.
	learned map[string]job.RateLimit
	// parts is how many parts each key was last taken at here: a raise
	// and a learn reach them all, and a declared limit is on no item.
	parts map[string]int
}

// NewBuckets returns the store over the buckets table.
func NewBuckets(c BucketClient, table string) *Buckets {
	return &Buckets{t: side{layout: bucketsLayout, table: table, get: c, update: c}, per: job.PartRequests,
		seen: map[string]job.Bucket{}, learned: map[string]job.RateLimit{}, parts: map[string]int{}}
}

// SplitAt sets the requests a minute one part of a key carries (default
// job.PartRequests): a test scaled down from DynamoDB's item limits
// scales the parts with them.
func (s *Buckets) SplitAt(requestsPerMinute int64) *Buckets {
	s.per = requestsPerMinute
	return s
}

func us(t time.Time) types.AttributeValue { return avN(t.UnixMicro()) }

// seenOf is the last item seen of a part (zero: none yet, which the
// first write's condition checks like any other guess).
func (s *Buckets) seenOf(item string) job.Bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[item]
}

// guess is the last item seen of a part of t's key, with the key's
// learned limit as last seen on any of its parts, and how many parts the
// key has at the limit t is priced at on it: its declared one, completed
// by the learned one. A take states the learned limit it was priced at,
// so a part that holds another refuses it, and the take is priced again
// at the part's (and, if that limit has other parts, chooses again).
func (s *Buckets) guess(t job.Take, item string) (job.Bucket, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.seen[item]
	b.Learned = s.learned[t.Provider]
	n := t.On(b).Limit.Parts(s.per)
	s.parts[t.Provider] = n
	return b, n
}

// Take applies t to a part of its key's bucket when one allows it, else
// answers the shortest wait of the parts it tried (job.PartTries; a
// short wait is answered at once, job.PartWait). A part the last item
// seen of it already says is spent is not written: its times only move
// forward but for gives, so the write would be refused (a give by
// another worker not yet seen here makes the wait answered that much
// too long; the tokens stay in the part for the next take).
func (s *Buckets) Take(ctx context.Context, t job.Take) (job.Taken, error) {
	_, n := s.guess(t, t.Provider)
	order, wait := job.PartOrder(n), time.Duration(0)
	for try := 0; try < takeTries && len(order) > 0; try++ {
		item := job.PartKey(t.Provider, order[0])
		b, m := s.guess(t, item)
		if m != n { // the key's limit was learned anew meanwhile: its parts are others
			n, order = m, job.PartOrder(m)
			continue
		}
		if w := t.In(b, n).Wait(b); w > 0 {
			wait, order = shortest(wait, w), order[1:]
			if w <= job.PartWait {
				break // at its edge, as the others are
			}
			continue
		}
		o, err := s.t.change(ctx, "take from bucket", s.t.key(item), take(t, b, n))
		if err != nil {
			return job.Taken{}, err
		}
		if !o.refused {
			s.saw(item, o.item)
			return job.Taken{OK: true, Limit: t.On(b).Limit, Part: order[0]}, nil
		}
		if _, err = s.current(ctx, item, o.item); err != nil {
			return job.Taken{}, err
		}
		// Guessed again from the item: a wait, or the right case.
	}
	if wait > 0 {
		return job.Taken{Wait: wait}, nil
	}
	return job.Taken{Wait: lostWait}, nil
}

// shortest is the shorter of two waits, 0 being none yet.
func shortest(a, b time.Duration) time.Duration {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// take is the write of t on a part (of n) guessed to be b.
func take(t job.Take, b job.Bucket, n int) *expr {
	rc, tc := t.In(b, n).Cost()
	e := newExpr()
	e.values[":now"] = us(t.Now)
	kind := func(attr string, at time.Time, cost time.Duration) {
		n, v := e.name(attr), ":"+attr
		switch {
		case cost <= 0: // nothing to move: only no pause may hold it
			e.conds = append(e.conds, "(attribute_not_exists("+n+") OR "+n+" <= "+v+"_latest)")
			e.values[v+"_latest"] = us(job.Latest(t.Now, 0))
		case at.Before(t.Now): // passed (or never taken): from now; a time at now is ADDed to
			e.conds = append(e.conds, "(attribute_not_exists("+n+") OR "+n+" < :now)")
			e.set = append(e.set, n+" = "+v)
			e.values[v] = us(t.Now.Add(cost))
		default:
			e.conds = append(e.conds, "("+n+" >= :now AND "+n+" <= "+v+"_latest)")
			e.add = append(e.add, n+" "+v)
			e.values[v], e.values[v+"_latest"] = avN(cost.Microseconds()), us(job.Latest(t.Now, cost))
		}
	}
	kind(bRequests, b.Requests, rc)
	kind(bTokens, b.Tokens, tc)
	// The limits the take was priced at, where they were learned.
	if t.Limit.RequestsPerMinute <= 0 {
		e.is(bLearnedRPM, b.Learned.RequestsPerMinute)
	}
	if t.Limit.TokensPerMinute <= 0 {
		e.is(bLearnedTPM, b.Learned.TokensPerMinute)
	}
	if len(e.set)+len(e.add) == 0 {
		e.set = append(e.set, e.name(bTaken)+" = :now") // a write, for its condition
	}
	return e
}

// current is the part after a refused write: the item DynamoDB returned
// with the failure (real DynamoDB), else a consistent read (emulators
// return none).
func (s *Buckets) current(ctx context.Context, item string, it map[string]types.AttributeValue) (job.Bucket, error) {
	it, err := s.t.standing(ctx, "read bucket", s.t.key(item), it)
	if err != nil {
		return job.Bucket{}, err
	}
	return s.saw(item, it), nil
}

// saw remembers the item it as the part item's bucket, and its learned
// limits as its key's, and answers it.
func (s *Buckets) saw(item string, it map[string]types.AttributeValue) job.Bucket {
	n := func(k string) int64 {
		n, _ := strconv.ParseInt(attrN(it, k), 10, 64)
		return n
	}
	at := func(k string) time.Time {
		if n := n(k); n != 0 {
			return time.UnixMicro(n).UTC()
		}
		return time.Time{}
	}
	b := job.Bucket{Provider: item, Requests: at(bRequests), Tokens: at(bTokens), Cut: at(bCut),
		Learned: job.RateLimit{RequestsPerMinute: n(bLearnedRPM), TokensPerMinute: n(bLearnedTPM)}}
	key, _ := job.PartOf(item)
	s.mu.Lock()
	s.seen[item], s.learned[key] = b, b.Learned
	s.mu.Unlock()
	return b
}

// Give returns over-taken tokens to the part they were taken from, at
// that part's share of the limit, with a relative ADD, which needs no
// guess; a part whose tokens were never taken has nothing to return.
func (s *Buckets) Give(ctx context.Context, g job.Give) error {
	item := job.PartKey(g.Provider, g.Part)
	g.Limit = g.Limit.Part(g.Limit.Parts(s.per))
	back := g.Cost()
	if back <= 0 {
		return nil
	}
	e := newExpr()
	n := e.name(bTokens)
	e.when("attribute_exists(" + n + ")")
	e.add = append(e.add, n+" "+e.value("back", avN(-back.Microseconds())))
	o, err := s.t.change(ctx, "give to bucket", s.t.key(item), e) // refused: nothing was taken
	if err == nil && !o.refused {
		s.saw(item, o.item) // a take here must not answer a wait from before the give
	}
	return err
}

// Learn records l (job.Learn) on every part of its key: each holds the
// whole key's limit, which a take on it states and divides. The parts
// are those of the limit before and after, and of the last take here (a
// declared limit is on no item); the key's own item is written last, so
// a key whose own item holds a limit holds it on every part but those of
// a learner stopped halfway, which the next answer's learn completes. A
// limit learned from throttles is on the key's own item alone (its one
// part).
func (s *Buckets) Learn(ctx context.Context, l job.Learn) error {
	n := 1
	if l.Step == job.NoStep {
		was := s.seenOf(l.Provider)
		next, _ := l.Apply(was)
		s.mu.Lock()
		n = max(s.parts[l.Provider], was.Learned.Parts(s.per), next.Learned.Parts(s.per))
		s.mu.Unlock()
	}
	for i := n - 1; i >= 0; i-- {
		if err := s.learnPart(ctx, l, job.PartKey(l.Provider, i)); err != nil {
			return err
		}
	}
	return nil
}

// learnPart records l on one part: a compare-and-set of the learned
// limits and the last cut the item held when last seen, guessed again
// from the item on a refusal; a learn that changes nothing of the item
// seen is not written. A throttle-learned limit's growth is an ADD,
// which commutes with the other workers' answers.
func (s *Buckets) learnPart(ctx context.Context, l job.Learn, item string) error {
	b := s.seenOf(item)
	for range takeTries {
		next, changed := l.Apply(b)
		if !changed {
			return nil
		}
		o, err := s.t.change(ctx, "learn a bucket's limit", s.t.key(item), learnExpr(l, b, next))
		if err != nil {
			return err
		}
		if !o.refused {
			s.saw(item, o.item)
			return nil
		}
		if b, err = s.current(ctx, item, o.item); err != nil {
			return err
		}
	}
	return nil // lost to other workers' learning every time: they learned it
}

// learnExpr is the write that moves the bucket b to next for l.
func learnExpr(l job.Learn, b, next job.Bucket) *expr {
	e := newExpr()
	if l.Step == job.Grow && l.Limit.IsZero() {
		n := e.name(bLearnedRPM)
		e.conds = append(e.conds, n+" > :zero AND "+n+" < :most")
		e.add = append(e.add, n+" :one")
		e.values[":zero"], e.values[":most"], e.values[":one"] = avN(0), avN(job.ThrottledMax), avN(1)
		return e
	}
	for _, f := range []struct {
		attr     string
		was, now int64
	}{
		{bLearnedRPM, b.Learned.RequestsPerMinute, next.Learned.RequestsPerMinute},
		{bLearnedTPM, b.Learned.TokensPerMinute, next.Learned.TokensPerMinute},
		{bCut, micros(b.Cut), micros(next.Cut)},
	} {
		if f.was == f.now {
			continue
		}
		e.is(f.attr, f.was)
		e.set = append(e.set, e.name(f.attr)+" = :"+f.attr)
		e.values[":"+f.attr] = avN(f.now)
	}
	return e
}

// micros is t in microseconds since the epoch, 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// Raise moves the times of r's part (a lower: the part the answering
// call took from), or of every part of the key (a pause), to at least
// r's (job.Raise): a part's time where exactly so many more of its takes
// fit (each 1/n of the key's, at n times the cost) is the key's time for
// as many of the key's, so the whole key's word lowers one part rightly,
// and a lower is one write, not one per part (which made part 0 the
// key's hot item again: every answer wrote it). A pause's parts are
// those of the last take here, else of the limit
// last seen learned (a key whose limit is learned from throttles keeps
// one part however high it grows, which only a take knows). One
// conditional write per time: a time already later stays. A time the
// last item seen of the part already had at or after r's is not
// written: times only move forward but for gives, so the write would
// change nothing (or undo a give's few tokens).
func (s *Buckets) Raise(ctx context.Context, r job.Raise) error {
	if !r.EveryPart {
		return s.raisePart(ctx, r, job.PartKey(r.Provider, r.Part))
	}
	s.mu.Lock()
	n, ok := s.parts[r.Provider]
	if !ok {
		n = s.learned[r.Provider].Parts(s.per)
	}
	s.mu.Unlock()
	for i := range n {
		if err := s.raisePart(ctx, r, job.PartKey(r.Provider, i)); err != nil {
			return err
		}
	}
	return nil
}

// raisePart raises one part's item.
func (s *Buckets) raisePart(ctx context.Context, r job.Raise, item string) error {
	seen := s.seenOf(item)
	for attr, at := range map[string]time.Time{bRequests: r.Requests, bTokens: r.Tokens} {
		if at.IsZero() || !at.After(map[string]time.Time{bRequests: seen.Requests, bTokens: seen.Tokens}[attr]) {
			continue
		}
		e := newExpr()
		n, v := e.name(attr), e.value("at", us(at))
		e.when("attribute_not_exists(" + n + ") OR " + n + " < " + v)
		e.set = append(e.set, n+" = "+v)
		if _, err := s.t.change(ctx, "raise bucket", s.t.key(item), e); err != nil { // refused: already later
			return err
		}
	}
	return nil
}

// Bucket answers a bucket's item as it stands (a consistent read): a
// key's own item (its part 0, with the learned limits), or a part's
// (job.PartKey).
func (s *Buckets) Bucket(ctx context.Context, item string) (job.Bucket, error) {
	return s.current(ctx, item, nil)
}

// CreateBucketsTable makes the buckets table as the CDK stack does (on
// demand, key provider), for local stacks; idempotent.
func CreateBucketsTable(ctx context.Context, c TableAPI, table string) error {
	return bucketsLayout.create(ctx, c, table)
}
