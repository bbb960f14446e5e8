package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// The quarantine table holds the inputs known to fail (job.Quarantine):
// one item per tenant, route and input hash, partition key the tenant and
// sort key "<route>#<input hash>", so a create's check is one GetItem and
// one tenant's list one Query. It holds only quarantines still in force
// (TTL on expires_at deletes the rest, within days; reads skip them
// before that), so an operator's list of every tenant's is a Scan of
// exactly what it shows.
const (
	qTenant  = "tenant"
	qKey     = "key"
	qClass   = "error_class"
	qJob     = "job_id"
	qAt      = "at_ms"
	qUntil   = "until_ms"
	qExpires = "expires_at"
)

// QuarantineClient is the part of the DynamoDB API the quarantine store
// calls.
type QuarantineClient interface {
	GetItem(context.Context, *ddb.GetItemInput, ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	DeleteItem(context.Context, *ddb.DeleteItemInput, ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	Query(context.Context, *ddb.QueryInput, ...func(*ddb.Options)) (*ddb.QueryOutput, error)
	Scan(context.Context, *ddb.ScanInput, ...func(*ddb.Options)) (*ddb.ScanOutput, error)
}

// Quarantines is the quarantine table.
type Quarantines struct {
	c     QuarantineClient
	table string
}

// NewQuarantines returns the store over the quarantine table.
func NewQuarantines(c QuarantineClient, table string) *Quarantines {
	return &Quarantines{c: c, table: table}
}

func quarantineKey(k job.QuarantineKey) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{qTenant: avS(k.Tenant), qKey: avS(k.Model + "#" + k.InputHash)}
}

// Quarantine puts q, replacing the tenant's earlier quarantine of the same
// input and route: the newest failure names the job to read.
func (s *Quarantines) Quarantine(ctx context.Context, q job.Quarantine) error {
	it := quarantineKey(q.Key())
	it[qClass], it[qJob] = avS(string(q.Class)), avS(q.JobID)
	it[qAt], it[qUntil], it[qExpires] = avN(q.At.UnixMilli()), avN(q.Until.UnixMilli()), avN(q.Until.Unix()+1)
	if _, err := s.c.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		return unavailable("put quarantine", err)
	}
	return nil
}

// Quarantined answers k's quarantine if one holds at now. The read is
// eventually consistent: a create within a second of the failure may
// still be let through, and then fails as its predecessor did.
func (s *Quarantines) Quarantined(ctx context.Context, k job.QuarantineKey, now time.Time) (job.Quarantine, bool, error) {
	out, err := s.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: quarantineKey(k)})
	if err != nil {
		return job.Quarantine{}, false, unavailable("get quarantine", err)
	}
	if len(out.Item) == 0 {
		return job.Quarantine{}, false, nil
	}
	q, err := quarantineOf(out.Item)
	if err != nil {
		return job.Quarantine{}, false, err
	}
	return q, q.Holds(now), nil
}

// Lift ends k's quarantine; lifting one that is not there is no error.
func (s *Quarantines) Lift(ctx context.Context, k job.QuarantineKey) error {
	if _, err := s.c.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: aws.String(s.table), Key: quarantineKey(k)}); err != nil {
		return unavailable("delete quarantine", err)
	}
	return nil
}

// List answers the quarantines in force at now, of tenant (one
// Query) or, with tenant empty, of every tenant (a Scan of the table,
// which holds only quarantines), newest first.
func (s *Quarantines) List(ctx context.Context, tenant string, now time.Time) ([]job.Quarantine, error) {
	var items []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		var page []map[string]types.AttributeValue
		var err error
		if page, start, err = s.page(ctx, tenant, start); err != nil {
			return nil, err
		}
		items = append(items, page...)
		if len(start) == 0 {
			break
		}
	}
	var qs []job.Quarantine
	for _, it := range items {
		q, err := quarantineOf(it)
		if err != nil {
			return nil, err
		}
		if q.Holds(now) {
			qs = append(qs, q)
		}
	}
	slices.SortFunc(qs, func(a, b job.Quarantine) int { return b.At.Compare(a.At) })
	return qs, nil
}

// page reads one page of List's items from start.
func (s *Quarantines) page(ctx context.Context, tenant string, start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
	if tenant == "" {
		out, err := s.c.Scan(ctx, &ddb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start})
		if err != nil {
			return nil, nil, unavailable("scan quarantines", err)
		}
		return out.Items, out.LastEvaluatedKey, nil
	}
	out, err := s.c.Query(ctx, &ddb.QueryInput{TableName: aws.String(s.table), ExclusiveStartKey: start,
		KeyConditionExpression:    aws.String("#tenant = :tenant"),
		ExpressionAttributeNames:  map[string]string{"#tenant": qTenant},
		ExpressionAttributeValues: map[string]types.AttributeValue{":tenant": avS(tenant)}})
	if err != nil {
		return nil, nil, unavailable("query quarantines", err)
	}
	return out.Items, out.LastEvaluatedKey, nil
}

func quarantineOf(it map[string]types.AttributeValue) (job.Quarantine, error) {
	key := attrS(it, qKey) // "<route>#<input hash>"; a hash has no '#'
	i := strings.LastIndex(key, "#")
	ok := i > 0
	model, hash := key[:max(i, 0)], key[i+1:]
	at, errAt := strconv.ParseInt(attrN(it, qAt), 10, 64)
	until, errUntil := strconv.ParseInt(attrN(it, qUntil), 10, 64)
	if !ok || errAt != nil || errUntil != nil {
		return job.Quarantine{}, unreadable(fmt.Errorf("quarantine item %q: %w", attrS(it, qKey), errors.Join(errAt, errUntil)))
	}
	return job.Quarantine{Tenant: attrS(it, qTenant), Model: model, InputHash: hash, Class: job.ErrorClass(attrS(it, qClass)),
		JobID: attrS(it, qJob), At: time.UnixMilli(at).UTC(), Until: time.UnixMilli(until).UTC()}, nil
}

// CreateQuarantineTable makes the quarantine table as the CDK stack does
// (on demand, TTL on expires_at), for local stacks; idempotent.
func CreateQuarantineTable(ctx context.Context, c TableAPI, table string) error {
	_, err := c.CreateTable(ctx, &ddb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(qTenant), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(qKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(qTenant), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(qKey), KeyType: types.KeyTypeRange},
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := waitActive(ctx, c, table); err != nil {
		return err
	}
	return enableTTL(ctx, c, table)
}
