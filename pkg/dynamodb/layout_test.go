package dynamodb_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// base is the fixed time of these tests; keep is a TTL no sweeper reaches.
var (
	base = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	keep = base.AddDate(100, 0, 0)
)

func queuedJob(key string) job.Job {
	return job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, InputHash: "sha256:" + key, Model: "default",
		Input: json.RawMessage(`{"messages":[]}`), State: job.Queued, MaxAttempts: 3, Budget: job.Cents(5),
		Deadline: base.Add(time.Hour), Version: 1, CreatedAt: base, UpdatedAt: base}
}

// raw is the item as stored, attribute name -> "S:value" / "N:value" /
// "L:S:a,S:b".
func raw(t *testing.T, c *ddb.Client, table, id string) map[string]string {
	t.Helper()
	out, err := c.GetItem(t.Context(), &ddb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for k, v := range out.Item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			m[k] = "S:" + v.Value
		case *types.AttributeValueMemberN:
			m[k] = "N:" + v.Value
		case *types.AttributeValueMemberL:
			var es []string
			for _, e := range v.Value {
				if s, ok := e.(*types.AttributeValueMemberS); ok {
					es = append(es, "S:"+s.Value)
				} else {
					es = append(es, fmt.Sprintf("%T", e))
				}
			}
			m[k] = "L:" + strings.Join(es, ",")
		default:
			m[k] = fmt.Sprintf("%T", v)
		}
	}
	return m
}

func expect(t *testing.T, when string, item map[string]string, want map[string]string) {
	t.Helper()
	for k, w := range want {
		g, ok := item[k]
		switch {
		case w == "" && ok:
			t.Errorf("%s: %s = %s, want it absent", when, k, g)
		case w != "" && g != w:
			t.Errorf("%s: %s = %q, want %q", when, k, g, w)
		}
	}
}

// fnvShard is the shard of id among n, written out here as item.go's
// comment gives it rather than asked of the store.
func fnvShard(id string, n int) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32() % uint32(n)
}

func ms(t time.Time) string { return "N:" + strconv.FormatInt(t.UnixMilli(), 10) }

// TestItemLayout pins the attributes of item.go's doc comment: types,
// units, cost and remaining budget kept together, lease attributes only
// while running, failure keys only once failed or abandoned, TTL seconds.
func TestItemLayout(t *testing.T) {
	ctx := t.Context()
	c, table := newTable(t)
	s := settings.Defaults()
	shards := s.FailureShards
	st := dynamodb.New(c, table, s)
	j := queuedJob("layout")
	j.Metadata = json.RawMessage(`{"k":"v"}`)
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	expect(t, "created", raw(t, c, table, j.ID), map[string]string{
		"id": "S:" + j.ID, "tenant": "S:t", "request_key": "S:layout", "input_hash": "S:sha256:layout", "model": "S:default",
		"input": `S:{"messages":[]}`, "metadata": `S:{"k":"v"}`, "state": "S:queued",
		"attempts": "N:0", "max_attempts": "N:3", "version": "N:1", "progress": "N:0",
		"budget_nc": "N:5000000000", "cost_nc": "N:0", "remaining_nc": "N:5000000000",
		"deadline_ms": ms(j.Deadline), "created_ms": ms(base), "updated_ms": ms(base),
		"lease_owner": "", "lease_until_ms": "", "error_class": "", "result": "", "expires_at": "", "fail_pk": "", "fail_sk": "",
		"saved_nc": "", "lanes": "", "result_lane": "",
		"tnt_pk": fmt.Sprintf("S:t#%d", fnvShard(j.ID, s.TenantShards)), "tnt_sk": fmt.Sprintf("S:%013d#%s", base.UnixMilli(), j.ID),
	})

	t1 := base.Add(time.Second)
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "w1", Now: t1, LeaseUntil: t1.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	expect(t, "claimed", raw(t, c, table, j.ID), map[string]string{
		"state": "S:running", "lease_owner": "S:w1", "lease_until_ms": ms(t1.Add(time.Minute)), "attempts": "N:1", "version": "N:2", "updated_ms": ms(t1),
	})
	t2 := t1.Add(time.Second)
	if _, err := st.Release(ctx, job.Release{ID: j.ID, Owner: "w1", Now: t2, Settlement: job.Settlement{Cost: 333_333_333}, Class: job.RateLimited, Detail: "http 429"}); err != nil {
		t.Fatal(err)
	}
	expect(t, "released", raw(t, c, table, j.ID), map[string]string{
		"state": "S:queued", "lease_owner": "", "lease_until_ms": "", "error_class": "S:rate_limited", "error_detail": "S:http 429",
		"cost_nc": "N:333333333", "remaining_nc": "N:4666666667", "fail_pk": "", "saved_nc": "",
	})
	t3 := t2.Add(time.Second)
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "w2", Now: t3, LeaseUntil: t3.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	t4 := t3.Add(time.Second)
	if _, err := st.End(ctx, job.End{ID: j.ID, Owner: "w2", Now: t4, Settlement: job.Settlement{Cost: 7, Saved: -250}, Class: job.ContentFiltered, ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	shard := fnvShard(j.ID, shards)
	expect(t, "failed", raw(t, c, table, j.ID), map[string]string{
		"state": "S:failed", "error_class": "S:content_filtered", "error_detail": "", "lease_owner": "",
		"cost_nc": "N:333333340", "remaining_nc": "N:4666666660", "version": "N:5", "saved_nc": "N:-250",
		"expires_at": "N:" + strconv.FormatInt(keep.Unix(), 10),
		"fail_pk":    fmt.Sprintf("S:content_filtered#%d", shard), "fail_sk": fmt.Sprintf("S:%013d#%s", t4.UnixMilli(), j.ID),
	})

	// A finish with no expiry writes no TTL (a zero time would be year 1,
	// which a sweeper deletes at once), and a success no failure keys.
	k := queuedJob("forever")
	k.Lanes = []job.Lane{job.Flex, job.Standard}
	if _, err := st.Create(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: k.ID, Owner: "w", Now: t1, LeaseUntil: t1.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Succeed(ctx, job.Succeed{ID: k.ID, Owner: "w", Now: t2, Result: json.RawMessage(`{"o":1}`), Lane: job.Flex,
		Settlement: job.Settlement{Saved: 1_250}}); err != nil {
		t.Fatal(err)
	}
	expect(t, "succeeded", raw(t, c, table, k.ID), map[string]string{
		"state": "S:succeeded", "result": `S:{"o":1}`, "result_model": "", "progress": "N:1", "expires_at": "", "fail_pk": "", "fail_sk": "",
		"result_lane": "S:flex", "saved_nc": "N:1250", "lanes": "L:S:flex,S:standard",
	})
}

// TestBatchLaneLayout pins the batch lane's attributes: an enlist writes
// the enlisted index's keys (enl_pk the lane, enl_ms the enlist time in
// ms) and hands the lease to the lane; a collect writes batch, hands the
// lease to the batch, and removes both keys, so the sparse index holds
// only jobs that wait.
func TestBatchLaneLayout(t *testing.T) {
	ctx := t.Context()
	c, table := newTable(t)
	st := dynamodb.New(c, table, settings.Defaults())
	j := queuedJob("batch-lane")
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	expect(t, "created", raw(t, c, table, j.ID), map[string]string{"enl_pk": "", "enl_ms": "", "batch": ""})
	t1 := base.Add(time.Second)
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "w1", Now: t1, LeaseUntil: t1.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	t2, until := t1.Add(time.Second), t1.Add(20*time.Hour)
	if _, err := st.Enlist(ctx, job.Enlist{ID: j.ID, Owner: "w1", Now: t2, Lane: "default#0", Until: until}); err != nil {
		t.Fatal(err)
	}
	expect(t, "enlisted", raw(t, c, table, j.ID), map[string]string{
		"state": "S:running", "lease_owner": "S:" + job.BatchOwner("w1"), "lease_until_ms": ms(until),
		"enl_pk": "S:default#0", "enl_ms": ms(t2), "batch": "", "version": "N:3", "updated_ms": ms(t2),
	})
	t3 := t2.Add(time.Second)
	if _, err := st.Collect(ctx, job.Collect{ID: j.ID, Owner: job.BatchOwner("w1"), Now: t3, Batch: "b1"}); err != nil {
		t.Fatal(err)
	}
	expect(t, "collected", raw(t, c, table, j.ID), map[string]string{
		"state": "S:running", "lease_owner": "S:" + job.BatchOwner("b1"), "lease_until_ms": ms(until),
		"enl_pk": "", "enl_ms": "", "batch": "S:b1", "version": "N:4", "updated_ms": ms(t3),
	})
}

// TestRecordsFromBeforeReservesAreClaimable: an item written by the
// version before budget holds has no reserve_nc; it reserves nothing, and
// the claim condition and job.Claim.Allows still agree on it.
func TestRecordsFromBeforeReservesAreClaimable(t *testing.T) {
	ctx := t.Context()
	c, table := newTable(t)
	st := dynamodb.New(c, table, settings.Defaults())
	j := queuedJob("legacy")
	item := map[string]types.AttributeValue{}
	for k, v := range map[string]string{"id": j.ID, "tenant": "t", "request_key": "legacy", "input_hash": "sha256:x", "model": "default",
		"input": `{"messages":[]}`, "state": "queued"} {
		item[k] = &types.AttributeValueMemberS{Value: v}
	}
	for k, v := range map[string]int64{"attempts": 0, "max_attempts": 3, "version": 1, "budget_nc": 1000, "cost_nc": 0,
		"remaining_nc": 1000, "deadline_ms": base.Add(time.Hour).UnixMilli(), "created_ms": base.UnixMilli(), "updated_ms": base.UnixMilli()} {
		item[k] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	before, err := st.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	claim := job.Claim{ID: j.ID, Owner: "w", Now: base.Add(time.Second), LeaseUntil: base.Add(time.Minute)}
	if !claim.Allows(before) {
		t.Fatalf("the domain refuses the legacy record: %+v", before)
	}
	got, err := st.Claim(ctx, claim)
	if err != nil || got.Held != 0 || got.Remaining() != 1000 || got.Attempts != 1 {
		t.Fatalf("claim of a legacy record: %+v %v", got, err)
	}
	got, err = st.Release(ctx, job.Release{ID: j.ID, Owner: "w", Now: base.Add(2 * time.Second), Settlement: job.Settlement{Cost: 10}, Class: job.Timeout})
	if err != nil || got.Cost != 10 || got.Remaining() != 990 {
		t.Fatalf("release: %+v %v", got, err)
	}
}
