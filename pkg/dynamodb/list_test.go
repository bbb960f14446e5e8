package dynamodb_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// listCase is a tenant's jobs on a table of their own: created three to a
// millisecond (ties the order breaks by id) over every shard of the tenant
// index, every fifth failed.
type listCase struct {
	st     *dynamodb.Store
	q      *queryCounter
	tenant string
	jobs   []job.Job
	seq    int
}

func newListCase(t *testing.T, n int) *listCase {
	t.Helper()
	c, table := newTable(t)
	l := &listCase{q: &queryCounter{Client: c}, tenant: "t-list"}
	l.st = dynamodb.New(l.q, table, settings.Defaults())
	shards := map[uint32]bool{}
	for i := range n {
		j := l.create(t, base.Add(time.Duration(i/3)*time.Millisecond), i%5 == 0)
		l.jobs = append(l.jobs, j)
		shards[fnvShard(j.ID, settings.Defaults().TenantShards)] = true
	}
	if len(shards) < 4 {
		t.Fatalf("%d jobs over %d shards: the merge is not exercised", n, len(shards))
	}
	return l
}

// create makes one of the tenant's jobs, created at at.
func (l *listCase) create(t *testing.T, at time.Time, failed bool) job.Job {
	t.Helper()
	l.seq++
	key := fmt.Sprint("k-", l.seq)
	j := queuedJob(key)
	j.ID, j.Tenant, j.CreatedAt, j.UpdatedAt = job.NewID(l.tenant, key), l.tenant, at, at
	if failed {
		j.State, j.ErrorClass = job.Failed, job.Overloaded
	}
	if _, err := l.st.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

// want is the ids of the jobs keep keeps, newest first and ties by id,
// highest first, worked out here rather than asked of the store.
func (l *listCase) want(keep func(job.Job) bool) []string {
	var js []job.Job
	for _, j := range l.jobs {
		if keep(j) {
			js = append(js, j)
		}
	}
	slices.SortFunc(js, func(a, b job.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return ids
}

// follow reads q's pages to the end, creating a job newer than all
// between each two of the first ten (kept in l.jobs: a later subtest lists it), and
// answers the ids in page order.
func (l *listCase) follow(t *testing.T, q job.ListQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pages never end")
		}
		p, err := l.st.List(t.Context(), q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		if len(p.Jobs) > q.Limit {
			t.Fatalf("a page of %d, limit %d", len(p.Jobs), q.Limit)
		}
		for _, j := range p.Jobs {
			if j.Tenant != l.tenant || j.CreatedAt.IsZero() {
				t.Fatalf("job %s: tenant %q, created %v: the summary lacks what the index must project", j.ID, j.Tenant, j.CreatedAt)
			}
			ids = append(ids, j.ID)
		}
		if p.Next == "" {
			return ids
		}
		q.Cursor = p.Next
		if pages < 10 {
			l.jobs = append(l.jobs, l.create(t, time.Now(), pages%2 == 0))
		}
	}
}

// TestListMergesTheTenantShards: a tenant's jobs, spread over the tenant
// index's shards, come back newest first (ties by id) over pages that
// neither repeat nor skip one, while new jobs are created between pages;
// with since (a read bounded on both sides) and a state filter too.
func TestListMergesTheTenantShards(t *testing.T) {
	l := newListCase(t, 80)
	since := base.Add(4 * time.Millisecond)
	for _, c := range []struct {
		name string
		q    job.ListQuery
		keep func(job.Job) bool
	}{
		{"everything, pages of 7", job.ListQuery{Limit: 7}, func(job.Job) bool { return true }},
		{"everything, pages of 1", job.ListQuery{Limit: 1}, func(job.Job) bool { return true }},
		{"since, pages of 4", job.ListQuery{Limit: 4, Since: since}, func(j job.Job) bool { return !j.CreatedAt.Before(since) }},
		{"failed, pages of 3", job.ListQuery{Limit: 3, State: job.Failed}, func(j job.Job) bool { return j.State == job.Failed }},
		// Ten summaries a shard, two of them failed: five rounds of one
		// leave shards unread, and the page comes back short.
		{"failed, pages of 1", job.ListQuery{Limit: 1, State: job.Failed}, func(j job.Job) bool { return j.State == job.Failed }},
		{"failed since, pages of 2", job.ListQuery{Limit: 2, State: job.Failed, Since: since}, func(j job.Job) bool {
			return j.State == job.Failed && !j.CreatedAt.Before(since)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.Tenant = l.tenant
			w := l.want(c.keep) // not the ones made between pages: newer than the first page
			got := l.follow(t, c.q)
			if !slices.Equal(got, w) {
				t.Fatalf("ids\n got %v\nwant %v", got, w)
			}
		})
	}
}

// TestAListPageReadsEachShardOnce: with no filter a page is one Query per
// shard, each of at most the page size (one more when since bounds it,
// for the cursor's own job), whatever the tenant holds; with a page of
// 20 over 8 shards, a query reads 2 x 3 + 2, not 20.
func TestAListPageReadsEachShardOnce(t *testing.T) {
	l := newListCase(t, 80)
	shards := settings.Defaults().TenantShards
	q := job.ListQuery{Tenant: l.tenant, Limit: 20}
	for _, step := range []string{"first page", "second page", "with since"} {
		l.q.reset()
		p, err := l.st.List(t.Context(), q)
		if err != nil || len(p.Jobs) != 20 || p.Next == "" {
			t.Fatalf("%s: %d jobs, next %q, %v", step, len(p.Jobs), p.Next, err)
		}
		limit := int32(2*3 + 2)
		if !q.Since.IsZero() {
			limit++
		}
		if n, most := l.q.stats(); n != shards || most > limit {
			t.Errorf("%s: %d queries of at most %d items, want %d of at most %d", step, n, most, shards, limit)
		}
		q.Cursor = p.Next
		if step == "second page" {
			q.Since = base
		}
	}
}

// TestAListCursorNotOursIsRefused: a cursor comes back from the client,
// so garbage, base64 of no position, a position without its time (the
// shape kumo's store once made) and one from before since are each an
// invalid_request naming the cursor, before any read.
func TestAListCursorNotOursIsRefused(t *testing.T) {
	l := newListCase(t, 12)
	id := l.jobs[0].ID
	for name, q := range map[string]job.ListQuery{
		"garbage":       {Cursor: "!!"},
		"no position":   {Cursor: "bm90LWEtY3Vyc29y"},
		"no time":       {Cursor: base64.RawURLEncoding.EncodeToString([]byte("." + id))},
		"a bad id":      {Cursor: job.Position{CreatedAt: base, ID: "job_nope"}.Cursor()},
		"before since":  {Cursor: job.Position{CreatedAt: base, ID: id}.Cursor(), Since: base.Add(time.Second)},
		"negative time": {Cursor: base64.RawURLEncoding.EncodeToString([]byte("-1." + id))},
	} {
		q.Tenant, q.Limit = l.tenant, 5
		l.q.reset()
		_, err := l.st.List(t.Context(), q)
		var je *job.Error
		if !errors.As(err, &je) || je.Code != job.CodeInvalidRequest || je.Field != "cursor" {
			t.Errorf("%s: %v, want invalid_request on cursor", name, err)
		}
		if n, _ := l.q.stats(); n != 0 {
			t.Errorf("%s: %d queries before the refusal", name, n)
		}
	}
}

// queryCounter is the store's client, counting its queries and the
// largest Limit one asked for.
type queryCounter struct {
	*ddb.Client
	mu   sync.Mutex
	n    int
	most int32
}

func (c *queryCounter) Query(ctx context.Context, in *ddb.QueryInput, opts ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	c.mu.Lock()
	c.n++
	c.most = max(c.most, aws.ToInt32(in.Limit))
	c.mu.Unlock()
	return c.Client.Query(ctx, in, opts...)
}

func (c *queryCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.most = 0, 0
}

func (c *queryCounter) stats() (int, int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.most
}

// TestAShortPageHoldsNoJobAnUnreadShardMayOutrank: when a filter leaves
// a shard still unread after the page's rounds, a job found in another
// shard waits for a later page if the unread part may hold a newer one,
// rather than being shown before it (its cursor would then skip the newer
// one). Shard 1 holds six queued jobs above a failed one; shard 0 one
// older failed job.
func TestAShortPageHoldsNoJobAnUnreadShardMayOutrank(t *testing.T) {
	l := &listCase{tenant: "t-deep"}
	c, table := newTable(t)
	l.q = &queryCounter{Client: c}
	l.st = dynamodb.New(l.q, table, settings.Defaults())
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	in := func(shard int) { // the next key whose job lands in shard
		for fnvShard(job.NewID(l.tenant, fmt.Sprint("k-", l.seq+1)), settings.Defaults().TenantShards) != uint32(shard) {
			l.seq++
		}
	}
	for s := 20; s < 26; s++ {
		in(1)
		l.jobs = append(l.jobs, l.create(t, at(s), false))
	}
	in(1)
	newer := l.create(t, at(15), true)
	in(0)
	older := l.create(t, at(10), true)
	q := job.ListQuery{Tenant: l.tenant, State: job.Failed, Limit: 1}
	var got []string
	for pages := 0; pages < 20; pages++ {
		p, err := l.st.List(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if q.Cursor = p.Next; q.Cursor == "" {
			break
		}
	}
	if want := []string{newer.ID, older.ID}; !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v (the newer failed job first)", got, want)
	}
}
