package dynamodb

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The side tables are the tables beside the jobs table: the buckets table
// (the providers' buckets, the tenants' slots and the batch records), the
// tenants table and the quarantine table. What each keeps and decides is
// in its own file; what they all do alike is here, once: the key, one
// item's read, its conditional write (a refusal is an answer, not an
// error), its delete and the pages of a query or a scan; the table's
// making is layout.create, in table.go. Every failed call ends as a job
// package error (unavailable), so no AWS error leaves the package.

// layout is a side table's shape: its key attributes (sort empty: keyed
// by hash alone) and whether TTL deletes its items (on expires_at, the
// jobs table's TTL attribute too; an item's value is expiresAt's).
type layout struct {
	hash, sort string
	ttl        bool
}

var (
	bucketsLayout    = layout{hash: bProvider, ttl: true}
	tenantsLayout    = layout{hash: tTenant}
	quarantineLayout = layout{hash: qTenant, sort: qKey, ttl: true}
)

// key is the item key of hash (and, where the layout has a sort key, sort).
func (l layout) key(hash string, sort ...string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{l.hash: avS(hash)}
	if l.sort != "" && len(sort) > 0 {
		k[l.sort] = avS(sort[0])
	}
	return k
}

// expiresAt is the TTL attribute's value for an item that must stay until
// t: the first whole second after it (DynamoDB's TTL counts seconds).
func expiresAt(t time.Time) types.AttributeValue { return avN(t.Unix() + 1) }

// The calls of the DynamoDB API a side table's store may make; each store
// hands side those of its own client.
type (
	itemGetter interface {
		GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	}
	itemPutter interface {
		PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	}
	itemUpdater interface {
		UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
	}
	itemDeleter interface {
		DeleteItem(context.Context, *ddb.DeleteItemInput, ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	}
	querier interface {
		Query(context.Context, *ddb.QueryInput, ...func(*ddb.Options)) (*ddb.QueryOutput, error)
	}
	scanner interface {
		Scan(context.Context, *ddb.ScanInput, ...func(*ddb.Options)) (*ddb.ScanOutput, error)
	}
)

// side is one store's side table: its layout and name, and the calls its
// store's client makes (nil where the store makes none: the client's
// interface does not offer it).
type side struct {
	layout
	table  string
	get    itemGetter
	put    itemPutter
	update itemUpdater
	del    itemDeleter
	query  querier
	scan   scanner
}

// outcome is a conditional write's answer: refused when its condition
// failed, and item, the item after the write or, refused, before it
// (real DynamoDB returns it; emulators return none: standing reads it).
type outcome struct {
	item    map[string]types.AttributeValue
	refused bool
}

// read is key's item (empty when there is none); consistent reads see
// every write acknowledged before.
func (s side) read(ctx context.Context, what string, key map[string]types.AttributeValue, consistent bool) (map[string]types.AttributeValue, error) {
	out, err := s.get.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: key, ConsistentRead: aws.Bool(consistent)})
	if err != nil {
		return nil, unavailable(what, err)
	}
	return out.Item, nil
}

// standing is key's item after a refused write: it, when DynamoDB
// returned it with the refusal, else a consistent read.
func (s side) standing(ctx context.Context, what string, key, it map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if len(it) > 0 {
		return it, nil
	}
	return s.read(ctx, what, key, true)
}

// change is one UpdateItem of key by e.
func (s side) change(ctx context.Context, what string, key map[string]types.AttributeValue, e *expr) (outcome, error) {
	out, err := s.update.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: key,
		UpdateExpression: aws.String(e.update()), ConditionExpression: e.condition(),
		ExpressionAttributeNames: orNil(e.names), ExpressionAttributeValues: orNil(e.values),
		ReturnValues: types.ReturnValueAllNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err != nil {
		return refusal(what, err)
	}
	return outcome{item: out.Attributes}, nil
}

// write is one PutItem of it, conditioned by e's conditions (e nil: none).
func (s side) write(ctx context.Context, what string, it map[string]types.AttributeValue, e *expr) (outcome, error) {
	in := &ddb.PutItemInput{TableName: aws.String(s.table), Item: it}
	if e != nil {
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.condition(), orNil(e.names), orNil(e.values)
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	if _, err := s.put.PutItem(ctx, in); err != nil {
		return refusal(what, err)
	}
	return outcome{item: it}, nil
}

// refusal sorts a failed write: a refused condition is an outcome, any
// other failure the store's unavailability.
func refusal(what string, err error) (outcome, error) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return outcome{item: ccf.Item, refused: true}, nil
	}
	return outcome{}, unavailable(what, err)
}

// remove deletes key's item; one that is not there is no error.
func (s side) remove(ctx context.Context, what string, key map[string]types.AttributeValue) error {
	if _, err := s.del.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: aws.String(s.table), Key: key}); err != nil {
		return unavailable(what, err)
	}
	return nil
}

// items answers every item whose hash key is hash (a Query) or, hash
// empty, every item of the table (a Scan), all their pages.
func (s side) items(ctx context.Context, what, hash string) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		page, next, err := s.page(ctx, what, hash, start)
		if err != nil {
			return nil, err
		}
		items = append(items, page...)
		if start = next; len(start) == 0 {
			return items, nil
		}
	}
}

// page reads one page of items' from start.
func (s side) page(ctx context.Context, what, hash string, start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
	if hash == "" {
		out, err := s.scan.Scan(ctx, &ddb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start})
		if err != nil {
			return nil, nil, unavailable("scan "+what, err)
		}
		return out.Items, out.LastEvaluatedKey, nil
	}
	e := newExpr()
	out, err := s.query.Query(ctx, &ddb.QueryInput{TableName: aws.String(s.table), ExclusiveStartKey: start,
		KeyConditionExpression:    aws.String(e.name(s.hash) + " = " + e.value("hash", avS(hash))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values})
	if err != nil {
		return nil, nil, unavailable("query "+what, err)
	}
	return out.Items, out.LastEvaluatedKey, nil
}

// expr gathers one side table write's conditions, update and the names
// and values they use.
type expr struct {
	names         map[string]string
	values        map[string]types.AttributeValue
	conds         []string
	set, add, del []string
	rem           []string
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name is attr's placeholder.
func (e *expr) name(attr string) string {
	e.names["#"+attr] = attr
	return "#" + attr
}

// value is v's placeholder, ":"+name.
func (e *expr) value(name string, v types.AttributeValue) string {
	e.values[":"+name] = v
	return ":" + name
}

// when conditions the write on c; every condition must hold.
func (e *expr) when(c string) { e.conds = append(e.conds, c) }

// is conditions the write on attr holding n, or being absent when n is 0.
func (e *expr) is(attr string, n int64) {
	if n == 0 {
		e.when("attribute_not_exists(" + e.name(attr) + ")")
		return
	}
	e.when(e.name(attr) + " = " + e.value("was_"+attr, avN(n)))
}

func (e *expr) update() string {
	var u []string
	for _, c := range []struct {
		op    string
		parts []string
	}{{"SET", e.set}, {"ADD", e.add}, {"DELETE", e.del}, {"REMOVE", e.rem}} {
		if len(c.parts) > 0 {
			u = append(u, c.op+" "+strings.Join(c.parts, ", "))
		}
	}
	return strings.Join(u, " ")
}

// condition is the write's ConditionExpression, nil when it has none.
// A condition with an OR brackets itself where it has company: DynamoDB
// refuses brackets it finds redundant, so they are not added here.
func (e *expr) condition() *string {
	if len(e.conds) == 0 {
		return nil
	}
	return aws.String(strings.Join(e.conds, " AND "))
}

// orNil is m, or nil when it is empty: DynamoDB refuses an empty map of
// names or values.
func orNil[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}

// stringSet is the string set of vs, for the ADD and DELETE of entries.
func stringSet(vs ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: vs} }
