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
// (job.Bucket): one item per key (job.RateLimit.Bucket: a provider entry,
// or "model#<entry>#<model>" for a per-model one), its two GCRA times in
// microseconds since the epoch and the limits learned from the provider's
// answers. A take is one conditional UpdateItem. DynamoDB's conditions
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
	mu   sync.Mutex
	seen map[string]job.Bucket // the last item seen of each provider
}

// NewBuckets returns the store over the buckets table.
func NewBuckets(c BucketClient, table string) *Buckets {
	return &Buckets{t: side{layout: bucketsLayout, table: table, get: c, update: c}, seen: map[string]job.Bucket{}}
}

func us(t time.Time) types.AttributeValue { return avN(t.UnixMicro()) }

// seenOf is the last item seen of a bucket (zero: none yet, which the
// first write's condition checks like any other guess).
func (s *Buckets) seenOf(key string) job.Bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[key]
}

// Take applies t when the bucket allows it, else answers the wait.
func (s *Buckets) Take(ctx context.Context, t job.Take) (job.Taken, error) {
	b := s.seenOf(t.Provider)
	for range takeTries {
		o, err := s.t.change(ctx, "take from bucket", s.t.key(t.Provider), take(t, b))
		if err != nil {
			return job.Taken{}, err
		}
		if !o.refused {
			s.saw(t.Provider, o.item)
			return job.Taken{OK: true, Limit: t.On(b).Limit}, nil
		}
		if b, err = s.current(ctx, t.Provider, o.item); err != nil {
			return job.Taken{}, err
		}
		if w := t.Wait(b); w > 0 {
			return job.Taken{Wait: w}, nil
		}
	}
	return job.Taken{Wait: lostWait}, nil
}

// take is the write of t on a bucket guessed to be b.
func take(t job.Take, b job.Bucket) *expr {
	rc, tc := t.On(b).Cost()
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

// current is the bucket after a refused take: the item DynamoDB returned
// with the failure (real DynamoDB), else a consistent read (emulators
// return none).
func (s *Buckets) current(ctx context.Context, provider string, it map[string]types.AttributeValue) (job.Bucket, error) {
	it, err := s.t.standing(ctx, "read bucket", s.t.key(provider), it)
	if err != nil {
		return job.Bucket{}, err
	}
	return s.saw(provider, it), nil
}

// saw remembers the item it as provider's bucket, and answers it.
func (s *Buckets) saw(provider string, it map[string]types.AttributeValue) job.Bucket {
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
	b := job.Bucket{Provider: provider, Requests: at(bRequests), Tokens: at(bTokens), Cut: at(bCut),
		Learned: job.RateLimit{RequestsPerMinute: n(bLearnedRPM), TokensPerMinute: n(bLearnedTPM)}}
	s.mu.Lock()
	s.seen[provider] = b
	s.mu.Unlock()
	return b
}

// Give returns over-taken tokens with a relative ADD, which needs no
// guess; a bucket whose tokens were never taken has nothing to return.
func (s *Buckets) Give(ctx context.Context, g job.Give) error {
	back := g.Cost()
	if back <= 0 {
		return nil
	}
	e := newExpr()
	n := e.name(bTokens)
	e.when("attribute_exists(" + n + ")")
	e.add = append(e.add, n+" "+e.value("back", avN(-back.Microseconds())))
	_, err := s.t.change(ctx, "give to bucket", s.t.key(g.Provider), e) // refused: nothing was taken
	return err
}

// Learn records l (job.Learn) on its bucket: a compare-and-set of the
// learned limits and the last cut the item held when last seen, guessed
// again from the item on a refusal; a learn that changes nothing of the
// item seen is not written. A throttle-learned limit's growth is an ADD,
// which commutes with the other workers' answers.
func (s *Buckets) Learn(ctx context.Context, l job.Learn) error {
	b := s.seenOf(l.Provider)
	for range takeTries {
		next, changed := l.Apply(b)
		if !changed {
			return nil
		}
		o, err := s.t.change(ctx, "learn a bucket's limit", s.t.key(l.Provider), learnExpr(l, b, next))
		if err != nil {
			return err
		}
		if !o.refused {
			s.saw(l.Provider, o.item)
			return nil
		}
		if b, err = s.current(ctx, l.Provider, o.item); err != nil {
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

// Raise moves each of the bucket's times to at least r's (job.Raise),
// one conditional write each: a time already later stays.
// A time the last item seen already had at or after r's is not written:
// times only move forward but for gives, so the write would change
// nothing (or undo a give's few tokens).
func (s *Buckets) Raise(ctx context.Context, r job.Raise) error {
	s.mu.Lock()
	seen := s.seen[r.Provider]
	s.mu.Unlock()
	for attr, at := range map[string]time.Time{bRequests: r.Requests, bTokens: r.Tokens} {
		if at.IsZero() || !at.After(map[string]time.Time{bRequests: seen.Requests, bTokens: seen.Tokens}[attr]) {
			continue
		}
		e := newExpr()
		n, v := e.name(attr), e.value("at", us(at))
		e.when("attribute_not_exists(" + n + ") OR " + n + " < " + v)
		e.set = append(e.set, n+" = "+v)
		if _, err := s.t.change(ctx, "raise bucket", s.t.key(r.Provider), e); err != nil { // refused: already later
			return err
		}
	}
	return nil
}

// Bucket answers a provider's bucket as it stands (a consistent read).
func (s *Buckets) Bucket(ctx context.Context, provider string) (job.Bucket, error) {
	return s.current(ctx, provider, nil)
}

// CreateBucketsTable makes the buckets table as the CDK stack does (on
// demand, key provider), for local stacks; idempotent.
func CreateBucketsTable(ctx context.Context, c TableAPI, table string) error {
	return bucketsLayout.create(ctx, c, table)
}
