package dynamodb

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// listRounds bounds the rounds of queries one list page may take when a
// filter skips most of what it reads: the page then comes back short,
// with a cursor.
const listRounds = 5

// listProjection is what a list reads of the tenant index, asked for by
// name: DynamoDB answers no more than the index holds, but kumo answers a
// query of any index with the whole item (input and result included).
var listProjection, listNames = projectionOf(append([]string{aID, aTenantSK}, TenantProjection...))

// List answers a page of one tenant's jobs, newest first (ties by id,
// highest first), from the tenant index: the summary it projects, no
// input or result. The index spreads a tenant over TenantShards partition
// keys so that one tenant's writes are not one partition's, and a page is
// their merge. Each job's sort key, "<13-digit created ms>#<id>", is
// unique and is the cursor's position: every shard is read strictly
// below it, so a page follows the one before it exactly, whatever was
// created since (a new job sorts above every cursor). A round queries
// each shard that may still hold one of the page's jobs for perShard
// items, one more when since bounds the query (the cursor's own job, read
// again), so a page nearly always costs TenantShards queries of at most
// perShard+1 summaries when nothing is filtered, and never more than
// listRounds times TenantShards queries of at most Limit+1. State and
// Class filter after the read (a filter expression costs the same read
// units), so a page may hold fewer than Limit jobs and still have a next
// one.
func (s *Store) List(ctx context.Context, q job.ListQuery) (job.Page, error) {
	q.Limit = job.ClampLimit(q.Limit)
	m, err := s.newListMerge(q)
	if err != nil {
		return job.Page{}, err
	}
	for range listRounds {
		due := m.due()
		if len(due) == 0 {
			break
		}
		errs := make([]error, len(due))
		var wg sync.WaitGroup
		for i, sh := range due {
			wg.Go(func() { errs[i] = s.readShard(ctx, m, sh) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return job.Page{}, err
			}
		}
		for _, sh := range due {
			m.found = append(m.found, sh.matched...)
			sh.matched = nil
		}
	}
	return m.page()
}

// listMerge is one list page in the making: the shards' reads so far and
// the jobs they found that answer the query.
type listMerge struct {
	q        job.ListQuery
	lower    string // the since bound of every shard's sort key; "" for none
	perShard int    // the items a shard's query reads
	shards   []*listShard
	found    []listed
}

// listShard is one of the tenant's partition keys, read from the newest
// down: upper is the position it is next read strictly below ("" while
// unread without a cursor), done once nothing is left below it.
type listShard struct {
	pk      string
	upper   string
	done    bool
	matched []listed // the last round's finds
}

// listed is a job found, with its position in the tenant index.
type listed struct {
	pos string
	j   job.Job
}

// newListMerge starts q's page: every shard below q's cursor, if any.
func (s *Store) newListMerge(q job.ListQuery) (*listMerge, error) {
	m := &listMerge{q: q, perShard: perShard(q, s.idx.tenantShards)}
	if !q.Since.IsZero() {
		// Below every position of a job created at or after since, above
		// every one before.
		m.lower = listPosition(q.Since.UnixMilli(), "")
	}
	upper := ""
	if q.Cursor != "" {
		p, err := job.ParseCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		if p.CreatedAt.Before(q.Since) {
			// The page after it is empty whatever since is: a client
			// that changed since between pages meant another list.
			return nil, badCursor("the cursor is from before since: keep since as it was for the first page")
		}
		upper = listPosition(p.CreatedAt.UnixMilli(), p.ID)
	}
	for n := range s.idx.tenantShards {
		m.shards = append(m.shards, &listShard{pk: tenantShardKey(q.Tenant, n), upper: upper})
	}
	return m, nil
}

// perShard is how many items one query of a shard reads. Unfiltered, the
// page's jobs fall about evenly over the shards (the shard is a hash of
// the id), so twice a shard's share and two more nearly always hold every
// one of them: a shard that held more is read again by the next round,
// and a page of 100 over 8 shards reads 8 x 28 summaries, not 8 x 100.
// Filtered, what matches may be anywhere: a whole page's worth.
func perShard(q job.ListQuery, shards int) int {
	if q.State != "" || q.Class != "" {
		return q.Limit
	}
	return min(q.Limit, 2*((q.Limit+shards-1)/shards)+2)
}

// due is the shards the next round reads: those not done that may hold a
// job ranking among the page's Limit best found so far (all of them
// while fewer than Limit are found). A shard read down to that job or
// below holds no better one.
func (m *listMerge) due() []*listShard {
	m.sortFound()
	cut := ""
	if len(m.found) >= m.q.Limit {
		cut = m.found[m.q.Limit-1].pos
	}
	var due []*listShard
	for _, sh := range m.shards {
		if !sh.done && (cut == "" || sh.upper == "" || sh.upper > cut) {
			due = append(due, sh)
		}
	}
	return due
}

func (m *listMerge) sortFound() {
	slices.SortFunc(m.found, func(a, b listed) int { return strings.Compare(b.pos, a.pos) })
}

// page is the merge's answer. A job is in it only if every shard not done
// was read down to it or below (its position at or above the highest
// upper of those): a job below that could be outranked by one not yet
// read. The cursor is the last job's position when the page is full, and
// else the highest upper still open, above which every job was read.
func (m *listMerge) page() (job.Page, error) {
	m.sortFound()
	open := ""
	for _, sh := range m.shards {
		if !sh.done && sh.upper > open {
			open = sh.upper
		}
	}
	safe := m.found // newest first: the safe ones are a prefix
	if i := slices.IndexFunc(m.found, func(f listed) bool { return f.pos < open }); i >= 0 {
		safe = m.found[:i]
	}
	n := min(m.q.Limit, len(safe))
	var p job.Page
	for _, f := range safe[:n] {
		p.Jobs = append(p.Jobs, f.j)
	}
	next := ""
	switch {
	case n == m.q.Limit && (len(m.found) > n || open != ""):
		next = safe[n-1].pos
	case n < m.q.Limit && open != "":
		next = open
	}
	if next == "" {
		return p, nil
	}
	pos, err := positionOf(next)
	if err != nil {
		return job.Page{}, err
	}
	p.Next = pos.Cursor()
	return p, nil
}

// readShard reads sh once, below its upper and at or above the since
// bound, newest first, and moves its upper to the last position read.
// Only sh and its own finds are written: shards are read at once.
func (s *Store) readShard(ctx context.Context, m *listMerge, sh *listShard) error {
	limit := m.perShard
	in := &ddb.QueryInput{
		TableName: aws.String(s.table), IndexName: aws.String(s.idx.tenant),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ProjectionExpression:      aws.String(listProjection),
		ExpressionAttributeNames:  maps.Clone(listNames),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS(sh.pk)},
		ScanIndexForward:          aws.Bool(false),
	}
	in.ExpressionAttributeNames["#pk"] = aTenantPK
	if sh.upper != "" || m.lower != "" { // DynamoDB refuses a name no expression uses
		in.ExpressionAttributeNames["#sk"] = aTenantSK
	}
	vals := in.ExpressionAttributeValues
	switch {
	case sh.upper != "" && m.lower != "":
		// BETWEEN is the only condition with two bounds, and it holds
		// upper's own job: read one more, and drop it.
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk BETWEEN :lower AND :upper")
		vals[":lower"], vals[":upper"] = avS(m.lower), avS(sh.upper)
		limit++
	case sh.upper != "":
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk < :upper")
		vals[":upper"] = avS(sh.upper)
	case m.lower != "":
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk >= :lower")
		vals[":lower"] = avS(m.lower)
	}
	in.Limit = aws.Int32(int32(limit))
	out, err := s.c.Query(ctx, in)
	if err != nil {
		return unavailable("list jobs", err)
	}
	sh.done = len(out.LastEvaluatedKey) == 0 || len(out.Items) == 0
	for _, it := range out.Items {
		pos := attrS(it, aTenantSK)
		if pos == sh.upper {
			continue
		}
		j, err := fromItem(it)
		if err != nil {
			return unreadable(err)
		}
		sh.upper = pos
		if (m.q.State == "" || j.State == m.q.State) && (m.q.Class == "" || j.ErrorClass == m.q.Class) {
			sh.matched = append(sh.matched, listed{pos, j})
		}
	}
	return nil
}

// positionOf reads a tenant index sort key back into the position a
// cursor carries.
func positionOf(pos string) (job.Position, error) {
	msText, id, ok := strings.Cut(pos, "#")
	created, err := strconv.ParseInt(msText, 10, 64)
	if !ok || err != nil {
		return job.Position{}, unreadable(errors.New("tenant index sort key " + strconv.Quote(pos) + " is not <ms>#<id>"))
	}
	return job.Position{CreatedAt: time.UnixMilli(created).UTC(), ID: id}, nil
}

func badCursor(msg string) error {
	return &job.Error{Code: job.CodeInvalidRequest, Field: "cursor", Message: msg}
}
