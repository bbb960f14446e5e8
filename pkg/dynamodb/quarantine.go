package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	qTenant = "tenant"
	qKey    = "key"
	qClass  = "error_class"
	qJob    = "job_id"
	qAt     = "at_ms"
	qUntil  = "until_ms"
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
type Quarantines struct{ t side }

// NewQuarantines returns the store over the quarantine table.
func NewQuarantines(c QuarantineClient, table string) *Quarantines {
	return &Quarantines{t: side{layout: quarantineLayout, table: table, get: c, put: c, del: c, query: c, scan: c}}
}

func quarantineKey(k job.QuarantineKey) map[string]types.AttributeValue {
	return quarantineLayout.key(k.Tenant, k.Model+"#"+k.InputHash)
}

// Quarantine puts q, replacing the tenant's earlier quarantine of the same
// input and route: the newest failure names the job to read.
func (s *Quarantines) Quarantine(ctx context.Context, q job.Quarantine) error {
	it := quarantineKey(q.Key())
	it[qClass], it[qJob] = avS(string(q.Class)), avS(q.JobID)
	it[qAt], it[qUntil], it[aExpires] = avN(q.At.UnixMilli()), avN(q.Until.UnixMilli()), expiresAt(q.Until)
	_, err := s.t.write(ctx, "put quarantine", it, nil)
	return err
}

// Quarantined answers k's quarantine if one holds at now. The read is
// eventually consistent: a create within a second of the failure may
// still be let through, and then fails as its predecessor did.
func (s *Quarantines) Quarantined(ctx context.Context, k job.QuarantineKey, now time.Time) (job.Quarantine, bool, error) {
	it, err := s.t.read(ctx, "get quarantine", quarantineKey(k), false)
	if err != nil {
		return job.Quarantine{}, false, err
	}
	if len(it) == 0 {
		return job.Quarantine{}, false, nil
	}
	q, err := quarantineOf(it)
	if err != nil {
		return job.Quarantine{}, false, err
	}
	return q, q.Holds(now), nil
}

// Lift ends k's quarantine; lifting one that is not there is no error.
func (s *Quarantines) Lift(ctx context.Context, k job.QuarantineKey) error {
	return s.t.remove(ctx, "delete quarantine", quarantineKey(k))
}

// List answers the quarantines in force at now, of tenant (one
// Query) or, with tenant empty, of every tenant (a Scan of the table,
// which holds only quarantines), newest first.
func (s *Quarantines) List(ctx context.Context, tenant string, now time.Time) ([]job.Quarantine, error) {
	items, err := s.t.items(ctx, "quarantines", tenant)
	if err != nil {
		return nil, err
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
	return quarantineLayout.create(ctx, c, table)
}
