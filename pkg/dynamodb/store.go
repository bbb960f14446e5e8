// Package dynamodb is the job store on Amazon DynamoDB. Every transition of
// pkg/job is ONE conditional write whose condition is the transition's
// precondition; a refused write is answered with the record as it is, so the
// caller decides without a read-modify-write. Driver errors become domain
// errors here and nowhere else.
package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// Client is the part of the DynamoDB API the store calls.
type Client interface {
	PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
	Query(context.Context, *ddb.QueryInput, ...func(*ddb.Options)) (*ddb.QueryOutput, error)
}

// Store keeps jobs in one table.
type Store struct {
	c      Client
	table  string
	shards int // of the failure index
	idx    indexes
}

// indexes are the secondary indexes' names and shard counts.
type indexes struct {
	failure, tenant, active, created, enlisted string
	activeShards, createdShards, tenantShards  int
}

// New returns the store over table, with the indexes and shard counts of s.
func New(c Client, table string, s settings.Settings) *Store {
	return &Store{c: c, table: table, shards: max(s.FailureShards, 1),
		idx: indexes{failure: s.FailureIndex, tenant: s.TenantIndex, active: s.ActiveIndex, activeShards: max(s.ActiveShards, 1),
			created: s.CreatedIndex, createdShards: max(s.CreatedShards, 1), enlisted: s.EnlistedIndex,
			tenantShards: max(s.TenantShards, 1)}}
}

// skewRetries bounds how often a write re-stamps updated_at after finding a
// record stamped by a writer whose clock was ahead.
const skewRetries = 3

// Create puts j unless its id exists; then it answers Conflict with the
// existing record (emulators return no ALL_OLD item, so it is read). A
// record DynamoDB would refuse for its size is job.CodeTooLarge, refused
// before any write.
func (s *Store) Create(ctx context.Context, j job.Job) (job.Job, error) {
	item := toItem(j, s.idx)
	if err := checkSize(item, j.MaxAttempts); err != nil {
		return job.Job{}, err
	}
	_, err := s.c.PutItem(ctx, &ddb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames:            map[string]string{"#id": aID},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return j, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return job.Job{}, unavailable("put job", err)
	}
	cur, _, err := s.current(ctx, j.ID, ccf.Item)
	if err != nil {
		return job.Job{}, err
	}
	return job.Job{}, job.Conflict(cur)
}

// Get reads the record with a strongly consistent read.
func (s *Store) Get(ctx context.Context, id string) (job.Job, error) {
	return s.read(ctx, "get job", &ddb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true),
	})
}

// read is one GetItem of a job, its driver errors made domain errors
// (what names the read in them).
func (s *Store) read(ctx context.Context, what string, in *ddb.GetItemInput) (job.Job, error) {
	out, err := s.c.GetItem(ctx, in)
	if err != nil {
		return job.Job{}, unavailable(what, err)
	}
	if len(out.Item) == 0 {
		return job.Job{}, job.NotFound()
	}
	j, err := fromItem(out.Item)
	if err != nil {
		return job.Job{}, unreadable(err)
	}
	return j, nil
}

// update is one conditional write: the precondition, the effect, and the
// values they name. ":upd" (the new updated_ms) is added by apply.
type update struct {
	cond   string
	expr   string
	values map[string]types.AttributeValue
	// token, when set, is added to the settled set with the effect, and the
	// write is applied only while the set lacks it: a retry of a write that
	// was applied but whose answer was lost (the SDK retries resets and 5xx)
	// is recognised instead of refused, and its cost is never added twice,
	// even if other writes landed in between.
	token string
	// owner and settles, on a finishing write (see settling), are the
	// attempt it settles and what: a refused one still settles it.
	owner   string
	settles job.Settlement
}

// apply runs one transition: the write, and on a refused condition the
// diagnosis. allows is the transition's precondition in code; when it holds
// and only the clock check failed, the write is re-stamped after the
// record's updated_at. A refused write that settles an attempt still
// settles it.
func (s *Store) apply(ctx context.Context, id string, now time.Time, allows func(job.Job) bool, u update) (job.Job, error) {
	stamp := job.Millis(now)
	for range skewRetries {
		out, err := s.write(ctx, id, u, stamp)
		if err == nil {
			return s.decode(out)
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return job.Job{}, unavailable("update job", err)
		}
		cur, raw, err := s.current(ctx, id, ccf.Item)
		if err != nil {
			return job.Job{}, err
		}
		if u.token != "" && tokenApplied(raw, u.token) {
			return cur, nil // our own earlier try was applied
		}
		if allows(cur) && !cur.UpdatedAt.Before(stamp) {
			stamp = job.NextUpdate(cur.UpdatedAt, now)
			continue
		}
		if !u.settles.IsZero() {
			return s.addCost(ctx, u, now, cur, raw)
		}
		return job.Job{}, job.Conflict(cur)
	}
	return job.Job{}, unavailable("update job", fmt.Errorf("job %s: updated_at kept moving", id))
}

// addCost settles a refused finish's attempt with no precondition but
// the record's existence (job.AddCost), then answers Conflict with the
// record after it. How it settles depends on the record, so the write is
// decided from the record it last saw and conditioned on what it decided
// from: whether the attempt was written off (its estimate is replaced)
// and whether its lease is still there (a job cancelled during the
// attempt: the lease goes with the settlement).
func (s *Store) addCost(ctx context.Context, refused update, now time.Time, cur job.Job, raw map[string]types.AttributeValue) (job.Job, error) {
	id := cur.ID
	stamp := job.Millis(now)
	for range skewRetries {
		u := refused.refused(cur, tokenApplied(raw, refused.owner+writeOffSuffix))
		out, err := s.write(ctx, id, u, stamp)
		if err == nil {
			j, err := s.decode(out)
			if err != nil {
				return job.Job{}, err
			}
			return job.Job{}, job.Conflict(j)
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return job.Job{}, unavailable("add cost", err)
		}
		if cur, raw, err = s.current(ctx, id, ccf.Item); err != nil {
			return job.Job{}, err
		}
		if u.token != "" && tokenApplied(raw, u.token) {
			return job.Job{}, job.Conflict(cur) // the cost was added by our earlier try
		}
		stamp = job.NextUpdate(cur.UpdatedAt, now)
	}
	return job.Job{}, unavailable("add cost", fmt.Errorf("job %s: kept moving", id))
}

var placeholder = regexp.MustCompile(`#[a-z_]+`)

func (s *Store) write(ctx context.Context, id string, u update, stamp time.Time) (*ddb.UpdateItemOutput, error) {
	cond := "(" + u.cond + ") AND #updated_ms < :upd"
	values := map[string]types.AttributeValue{":upd": avN(stamp.UnixMilli())}
	for k, v := range u.values {
		values[k] = v
	}
	expr := u.expr
	if u.token != "" {
		// Every token-bearing write ends with its ADD clause (costAdd).
		cond += " AND NOT contains(#settled, :wtoken)"
		expr += ", #settled :wset"
		values[":wtoken"] = avS(u.token)
		values[":wset"] = &types.AttributeValueMemberSS{Value: []string{u.token}}
	}
	names := map[string]string{}
	for _, p := range placeholder.FindAllString(cond+" "+expr, -1) {
		names[p] = p[1:]
	}
	return s.c.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(id),
		ConditionExpression:                 aws.String(cond),
		UpdateExpression:                    aws.String(expr),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
}

func (s *Store) decode(out *ddb.UpdateItemOutput) (job.Job, error) {
	j, err := fromItem(out.Attributes)
	if err != nil {
		return job.Job{}, unreadable(err)
	}
	return j, nil
}

// current is the record after a refused write: the item DynamoDB returned
// with the failure when it did (real DynamoDB), else a consistent read
// (emulators return none).
func (s *Store) current(ctx context.Context, id string, item map[string]types.AttributeValue) (job.Job, map[string]types.AttributeValue, error) {
	if len(item) == 0 {
		out, err := s.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return job.Job{}, nil, unavailable("get job", err)
		}
		if len(out.Item) == 0 {
			return job.Job{}, nil, job.NotFound()
		}
		item = out.Item
	}
	j, err := fromItem(item)
	if err != nil {
		return job.Job{}, nil, unreadable(err)
	}
	return j, item, nil
}

// tokenApplied reports whether item's tokenApplied set holds token.
func tokenApplied(item map[string]types.AttributeValue, token string) bool {
	if v, ok := item[aSettled].(*types.AttributeValueMemberSS); ok {
		return slices.Contains(v.Value, token)
	}
	return false
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{aID: avS(id)}
}
