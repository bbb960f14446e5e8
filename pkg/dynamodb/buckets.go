package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The buckets table holds each provider key's rate-limit bucket
// (job.Bucket): one item per provider, its two GCRA times in microseconds
// since the epoch. A take is one conditional UpdateItem. DynamoDB's
// conditions cannot do arithmetic on attributes, so the store states the
// take's rule for each time as one of two cases it guesses from the last
// item it saw: a time that has passed is SET to now plus the cost (its
// condition: it has passed), and a time still ahead is moved by an ADD of
// the cost (its condition: it is ahead, within the burst less the cost).
// Concurrent takes in the second case, the busy one, never refuse each
// other: ADD commutes. A refused write returns the item (or is read), and
// either the take must wait or the guess was wrong and is made again.
const (
	bProvider = "provider"
	bRequests = "req_tat_us"
	bTokens   = "tok_tat_us"
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
	c     BucketClient
	table string
	mu    sync.Mutex
	seen  map[string]job.Bucket // the last item seen of each provider
}

// NewBuckets returns the store over the buckets table.
func NewBuckets(c BucketClient, table string) *Buckets {
	return &Buckets{c: c, table: table, seen: map[string]job.Bucket{}}
}

func bucketKey(provider string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{bProvider: avS(provider)}
}

func us(t time.Time) types.AttributeValue { return avN(t.UnixMicro()) }

// Take applies t when the bucket allows it, else answers the wait.
func (s *Buckets) Take(ctx context.Context, t job.Take) (job.Taken, error) {
	s.mu.Lock()
	b := s.seen[t.Provider]
	s.mu.Unlock()
	if rc, tc := t.Cost(); rc <= 0 && tc <= 0 {
		return job.Taken{OK: true}, nil // nothing to take: no write
	}
	for range takeTries {
		out, err := s.c.UpdateItem(ctx, s.take(t, b))
		if err == nil {
			s.saw(t.Provider, out.Attributes)
			return job.Taken{OK: true}, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return job.Taken{}, unavailable("take from bucket", err)
		}
		if b, err = s.current(ctx, t.Provider, ccf.Item); err != nil {
			return job.Taken{}, err
		}
		if w := t.Wait(b); w > 0 {
			return job.Taken{Wait: w}, nil
		}
	}
	return job.Taken{Wait: lostWait}, nil
}

// take is the UpdateItem of t on a bucket guessed to be b.
func (s *Buckets) take(t job.Take, b job.Bucket) *ddb.UpdateItemInput {
	rc, tc := t.Cost()
	values := map[string]types.AttributeValue{":now": us(t.Now)}
	names := map[string]string{}
	var conds []string
	set, add := "", ""
	kind := func(attr string, at time.Time, cost time.Duration) {
		if cost <= 0 {
			return
		}
		n, v := "#"+attr, ":"+attr
		names[n] = attr
		if !at.After(t.Now) { // passed (or never taken): from now
			conds = append(conds, "(attribute_not_exists("+n+") OR "+n+" < :now)")
			set += ", " + n + " = " + v
			values[v] = us(t.Now.Add(cost))
			return
		}
		conds = append(conds, "("+n+" >= :now AND "+n+" <= "+v+"_latest)")
		add += ", " + n + " " + v
		values[v], values[v+"_latest"] = avN(cost.Microseconds()), us(job.Latest(t.Now, cost))
	}
	kind(bRequests, b.Requests, rc)
	kind(bTokens, b.Tokens, tc)
	expr := ""
	if set != "" {
		expr = "SET " + set[2:]
	}
	if add != "" {
		expr += " ADD " + add[2:]
	}
	return &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: bucketKey(t.Provider),
		ConditionExpression: aws.String(strings.Join(conds, " AND ")), UpdateExpression: aws.String(strings.TrimSpace(expr)),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues: types.ReturnValueAllNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
}

// current is the bucket after a refused take: the item DynamoDB returned
// with the failure (real DynamoDB), else a consistent read (emulators
// return none).
func (s *Buckets) current(ctx context.Context, provider string, it map[string]types.AttributeValue) (job.Bucket, error) {
	if len(it) == 0 {
		out, err := s.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: bucketKey(provider), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return job.Bucket{}, unavailable("read bucket", err)
		}
		it = out.Item
	}
	return s.saw(provider, it), nil
}

// saw remembers the item it as provider's bucket, and answers it.
func (s *Buckets) saw(provider string, it map[string]types.AttributeValue) job.Bucket {
	at := func(k string) time.Time {
		n, err := strconv.ParseInt(attrN(it, k), 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMicro(n).UTC()
	}
	b := job.Bucket{Provider: provider, Requests: at(bRequests), Tokens: at(bTokens)}
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
	_, err := s.c.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: bucketKey(g.Provider),
		ConditionExpression: aws.String("attribute_exists(#t)"), UpdateExpression: aws.String("ADD #t :back"),
		ExpressionAttributeNames: map[string]string{"#t": bTokens}, ExpressionAttributeValues: map[string]types.AttributeValue{":back": avN(-back.Microseconds())}})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return unavailable("give to bucket", err)
	}
	return nil
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
		_, err := s.c.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: bucketKey(r.Provider),
			ConditionExpression: aws.String("attribute_not_exists(#d) OR #d < :at"), UpdateExpression: aws.String("SET #d = :at"),
			ExpressionAttributeNames: map[string]string{"#d": attr}, ExpressionAttributeValues: map[string]types.AttributeValue{":at": us(at)}})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return unavailable("raise bucket", err)
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
	_, err := c.CreateTable(ctx, &ddb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(bProvider), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(bProvider), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	return waitActive(ctx, c, table)
}
