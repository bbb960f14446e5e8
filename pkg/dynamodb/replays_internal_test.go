package dynamodb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/replay"
	"github.com/aijobs/aijobs/pkg/settings"
)

// sizeLimited is the store's client with DynamoDB's item limit, which kumo
// does not enforce (docs/testing.md, "Emulator facts"): a write that
// would leave an item over 400 KB is refused as DynamoDB refuses it
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items),
// with a ValidationException "Item size has exceeded the maximum allowed
// size", and the item is left as it was. It counts what it refused and
// keeps the largest item it let through.
type sizeLimited struct {
	*ddb.Client
	mu      sync.Mutex
	refused []string
	largest int
}

var errItemTooLarge = &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}

func (c *sizeLimited) PutItem(ctx context.Context, in *ddb.PutItemInput, o ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	if n := itemSize(in.Item); n > maxItemBytes {
		c.refuse(fmt.Sprintf("PutItem of %d bytes", n))
		return nil, errItemTooLarge
	}
	out, err := c.Client.PutItem(ctx, in, o...)
	if err == nil {
		c.measured(itemSize(in.Item))
	}
	return out, err
}

// UpdateItem applies the update, measures the item it made and, over the
// limit, puts the item it replaced back (the tests drive one job at a
// time, so nothing writes in between).
func (c *sizeLimited) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	before, err := c.Client.GetItem(ctx, &ddb.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	out, err := c.Client.UpdateItem(ctx, in, o...)
	if err != nil {
		return out, err
	}
	after, err := c.Client.GetItem(ctx, &ddb.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if n := itemSize(after.Item); n > maxItemBytes {
		if _, err := c.Client.PutItem(ctx, &ddb.PutItemInput{TableName: in.TableName, Item: before.Item}); err != nil {
			return nil, err
		}
		c.refuse(fmt.Sprintf("UpdateItem to %d bytes: %s", n, aws.ToString(in.UpdateExpression)))
		return nil, errItemTooLarge
	}
	c.measured(itemSize(after.Item))
	return out, nil
}

func (c *sizeLimited) refuse(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = append(c.refused, what)
}

func (c *sizeLimited) measured(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.largest = max(c.largest, n)
}

// lifeRun drives one job's attempts and replays through the store's own
// transitions, a second of its clock a step, and keeps what its attempts
// cost: the record must always say the same.
type lifeRun struct {
	t       *testing.T
	st      *Store
	c       *sizeLimited
	table   string
	id      string
	now     time.Time
	owners  int
	cost    job.Nanocents // every attempt's cost, summed
	reserve job.Nanocents
}

func (l *lifeRun) tick() time.Time { l.now = l.now.Add(time.Second); return l.now }

// owner is a new lease owner as long as the worker's ("w_" and 20 characters).
func (l *lifeRun) owner() string { l.owners++; return fmt.Sprintf("w_%020d", l.owners) }

// size is the stored item's size, read back from the table.
func (l *lifeRun) size() int {
	l.t.Helper()
	out, err := l.c.Client.GetItem(l.t.Context(), &ddb.GetItemInput{TableName: aws.String(l.table), Key: key(l.id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		l.t.Fatal(err)
	}
	return itemSize(out.Item)
}

// ok fails the test unless a write landed: a finishing write refused for
// the item's size (too_large) or failed (unavailable) is an attempt's cost
// lost from the record.
func (l *lifeRun) ok(what string, err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatalf("%s: %v (code %s); refused by the item limit: %q", what, err, job.ErrorCode(err), l.c.refused)
	}
}

// settled checks the record after an attempt: nothing held, the cost the
// attempts' costs sum to, the item within DynamoDB's limit.
func (l *lifeRun) settled(what string) job.Job {
	l.t.Helper()
	j, err := l.st.Get(l.t.Context(), l.id)
	l.ok(what+": get", err)
	if j.Cost != l.cost || j.Held != 0 {
		l.t.Fatalf("%s: cost %d held %d, want cost %d (the attempts' sum) and nothing held", what, j.Cost, j.Held, l.cost)
	}
	if n := l.size(); n > maxItemBytes {
		l.t.Fatalf("%s: the item is %d bytes, over DynamoDB's %d", what, n, maxItemBytes)
	}
	return j
}

// claim claims the job for w as the worker does (pkg/worker/claim.go): a
// conflict that shows the job running under w is w's own claim, applied
// and its answer lost (the SDK retried it and the retry was refused).
func (l *lifeRun) claim(w string, now time.Time, lease time.Duration) {
	l.t.Helper()
	_, err := l.st.Claim(l.t.Context(), job.Claim{ID: l.id, Owner: w, Now: now, LeaseUntil: now.Add(lease)})
	if cur, ok := job.ConflictJob(err); ok && cur.State == job.Running && cur.LeaseOwner == w {
		l.t.Logf("claim of %s: applied, its answer lost and the retry refused", w)
		return
	}
	l.ok("claim", err)
}

// replay replays the failed job with n fresh attempts, as the operator's
// replay does (pkg/replay): a conflict that shows the job queued by one
// more replay than it had is this replay, applied and its answer lost
// (the SDK retried it and the retry was refused).
func (l *lifeRun) replay(n, replays int) error {
	l.t.Helper()
	now := l.tick()
	_, err := l.st.Replay(l.t.Context(), job.Replay{ID: l.id, Now: now, Attempts: n, Deadline: now.Add(time.Hour), ExpiresAt: now.AddDate(0, 0, 30)})
	if cur, ok := job.ConflictJob(err); ok && cur.State == job.Queued && cur.Replays == replays+1 {
		l.t.Logf("replay %d: applied, its answer lost and the retry refused", replays+1)
		return nil
	}
	return err
}

var longDetail = strings.Repeat("d", 200) // the worker cuts a provider's detail to 200 bytes

// released is an attempt that ends retryable: claimed, released with a
// class, the longest detail and a backoff.
func (l *lifeRun) released(cost job.Nanocents) {
	ctx, w, now := l.t.Context(), l.owner(), l.tick()
	l.claim(w, now, time.Minute)
	now = l.tick()
	_, err := l.st.Release(ctx, job.Release{ID: l.id, Owner: w, Now: now, Class: job.Overloaded, Detail: longDetail, NotBefore: now.Add(time.Second),
		Settlement: job.Settlement{Cost: cost, Held: l.reserve, Ran: time.Second}})
	l.ok("release", err)
	l.cost += cost
	l.tick()
}

// writtenOff is the attempt that leaves the most tokens: it raises its
// hold twice (two fallback rungs), its worker is cut off and the attempt
// written off (its hold charged as an estimate), and then its own release
// lands late, refused, and replaces the estimate with what it cost.
func (l *lifeRun) writtenOff(cost job.Nanocents) {
	ctx, w, now := l.t.Context(), l.owner(), l.tick()
	l.claim(w, now, 3*time.Second)
	held := l.reserve
	for range 2 {
		_, err := l.st.HoldMore(ctx, job.HoldMore{ID: l.id, Owner: w, Now: l.tick(), Amount: l.reserve, Total: held + l.reserve})
		l.ok("hold more", err)
		held += l.reserve
	}
	cur, err := l.st.Get(ctx, l.id)
	l.ok("get", err)
	_, err = l.st.WriteOff(ctx, job.NewWriteOff(cur, l.tick()))
	l.ok("write-off", err)
	_, err = l.st.Release(ctx, job.Release{ID: l.id, Owner: w, Now: l.tick(), Class: job.Timeout,
		Settlement: job.Settlement{Cost: cost, Held: held, Ran: 3 * time.Second}})
	if job.ErrorCode(err) != job.CodeConflict {
		l.t.Fatalf("late release after a write-off: %v, want a conflict that settles its cost", err)
	}
	l.cost += cost
}

// ended is the attempt that fails the job for good.
func (l *lifeRun) ended(cost job.Nanocents) {
	ctx, w, now := l.t.Context(), l.owner(), l.tick()
	l.claim(w, now, time.Minute)
	_, err := l.st.End(ctx, job.End{ID: l.id, Owner: w, Now: l.tick(), Class: job.Overloaded, Detail: longDetail, ExpiresAt: l.now.AddDate(0, 0, 30),
		Settlement: job.Settlement{Cost: cost, Held: l.reserve, Ran: time.Second}})
	l.ok("end", err)
	l.cost += cost
}

// atTheLimit is a queued job whose item is exactly as large as a create of
// maxAttempts attempts may be: one byte more is refused.
func atTheLimit(t *testing.T, st *Store, now time.Time, maxAttempts int) job.Job {
	t.Helper()
	j := job.Job{ID: job.NewID("jwt:a", "near-limit"), Tenant: "jwt:a", RequestKey: "near-limit", InputHash: "sha256:x", Model: "default",
		State: job.Queued, MaxAttempts: maxAttempts, Budget: 1 << 50, Reserve: 1_000_000, Deadline: now.Add(time.Hour),
		Version: 1, CreatedAt: now, UpdatedAt: now}
	limit := maxItemBytes - max(growth, lifeRoom(maxAttempts))
	input := func(pad int) json.RawMessage {
		return json.RawMessage(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", pad) + `"}]}`)
	}
	j.Input = input(0)
	j.Input = input(limit - itemSize(toItem(j, st.idx)))
	if n := itemSize(toItem(j, st.idx)); n != limit {
		t.Fatalf("the record is %d bytes, want %d", n, limit)
	}
	over := j
	over.Input = input(len(j.Input) - len(input(0)) + 1)
	if _, err := st.Create(t.Context(), over); job.ErrorCode(err) != job.CodeTooLarge {
		t.Fatalf("a record one byte over the create limit: %v, want too_large", err)
	}
	if _, err := st.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

type sink struct{}

func (sink) Send(context.Context, string, string) error { return nil }

// TestARecordAtTheLimitSurvivesItsReplays: a record created as large as a
// create may be (the item limit less its life's room) is run through
// lives of three attempts and replayed with three fresh attempts after
// each, until the store refuses the replay. The plain life releases twice
// with the longest detail and then fails the job; the worst one's second
// attempt raises its hold twice (two fallback rungs), is written off and
// settles late, which leaves the most tokens an attempt can. Every write
// goes through a client that refuses what DynamoDB would (an item over
// 400 KB; kumo enforces nothing), so the test shows that no attempt's
// write is ever refused for the item's size or loses its cost, that the
// item never outgrows the limit, and that the replay that would let it is
// refused as too_large, which the operator's replay reports as
// refused_too_large and not as an error to run again.
func TestARecordAtTheLimitSurvivesItsReplays(t *testing.T) {
	for _, c := range []struct {
		name string
		life []func(*lifeRun)
	}{
		{"plain", []func(*lifeRun){released, released, ended}},
		{"worst", []func(*lifeRun){released, writtenOff, ended}},
	} {
		t.Run(c.name, func(t *testing.T) { replayUntilRefused(t, c.life) })
	}
}

// The attempts a life is made of, each with a cost of its own.
func released(l *lifeRun)   { l.released(1_000_003) }
func writtenOff(l *lifeRun) { l.writtenOff(2_000_005) }
func ended(l *lifeRun)      { l.ended(3_000_007) }

func replayUntilRefused(t *testing.T, life []func(*lifeRun)) {
	ctx := t.Context()
	// More tries than the SDK's default 4: on a loaded CI machine kumo's
	// answers to this test's ~405 KB items were now and then cut off
	// ("deserialization failed ... use of closed network connection") four
	// times in a row, twice in this session's CI checks, failing a test
	// about record sizes on a transport hiccup. The assertions are the
	// same; only a read that never arrived is tried again.
	cfg := awstest.Config(t, nil)
	cfg.RetryMaxAttempts = 10
	base := awsclient.DynamoDB(cfg)
	table := awstest.Prefix(t)
	s := settings.Defaults()
	if err := CreateTable(ctx, base, table, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = base.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	c := &sizeLimited{Client: base}
	st := New(c, table, s)
	attempts := len(life) // per life: the create's, and each replay's
	// The clock is today's: kumo deletes an item whose expiry (TTL) has passed.
	now := time.Now().UTC().Truncate(time.Second)
	j := atTheLimit(t, st, now, attempts)
	l := &lifeRun{t: t, st: st, c: c, table: table, id: j.ID, now: now, reserve: j.Reserve}
	created := l.size()

	replays, lives := 0, []int{}
	var refusal error
	for n := 0; refusal == nil; n++ {
		before := l.size()
		for i, attempt := range life {
			attempt(l)
			l.settled(fmt.Sprintf("life %d, attempt %d", n, i+1))
		}
		if got := l.settled(fmt.Sprintf("life %d", n)); got.State != job.Failed {
			t.Fatalf("life %d: %s after its last attempt, want failed", n, got.State)
		}
		refusal = l.replay(attempts, replays)
		if refusal == nil {
			replays++
		}
		lives = append(lives, l.size()-before)
	}
	if job.ErrorCode(refusal) != job.CodeTooLarge {
		t.Fatalf("after %d replays the replay answered %v (code %s), want too_large", replays, refusal, job.ErrorCode(refusal))
	}
	if msg := refusal.(*job.Error).Message; strings.Contains(msg, "ValidationException") || msg == "" {
		t.Errorf("the refusal's message %q is not one to show an operator", msg)
	}
	if len(c.refused) != 0 {
		t.Fatalf("DynamoDB would have refused %d writes for the item's size: %q", len(c.refused), c.refused)
	}
	if replays < 1 {
		t.Fatalf("a record at the create limit was never replayed: %v", refusal)
	}
	final := l.settled("after the refused replay")
	if final.State != job.Failed || final.Replays != replays {
		t.Fatalf("after the refused replay: %s with %d replays, want failed with %d", final.State, final.Replays, replays)
	}

	// The operator's replay (the CLI's and the console's) says so, and
	// is not an error to run again; the record is as it was.
	r := replay.New(replay.Config{Store: st, Queue: sink{}, Limits: s.Limits, Clock: job.SystemClock{}})
	if out := r.Job(ctx, j.ID, replay.Options{Attempts: attempts}); out != replay.RefusedTooLarge {
		t.Fatalf("the operator's replay: %s, want %s", out, replay.RefusedTooLarge)
	}
	if again := l.settled("after the operator's replay"); again.Version != final.Version {
		t.Fatalf("the refused replay wrote: version %d, was %d", again.Version, final.Version)
	}
	t.Logf("created at %d bytes (the limit %d less %d); %d lives of %d attempts (%d replays, %d attempts) up to %d bytes, "+
		"the largest item written %d; bytes each life (and its replay) added: %v; then: %v",
		created, maxItemBytes, maxItemBytes-created, replays+1, attempts, replays, (replays+1)*attempts, l.size(), c.largest, lives, refusal)
}

// TestGrowthCoversTheLongestCreatedLife: the room every new record keeps
// is at least what a life of the most attempts a create may ask can add.
func TestGrowthCoversTheLongestCreatedLife(t *testing.T) {
	if n := settings.Defaults().Limits.MaxMaxAttempts; lifeRoom(n) > growth {
		t.Fatalf("a life of %d attempts may need %d bytes; new records keep %d", n, lifeRoom(n), growth)
	}
}

// TestReplayMeasuresTheRecordItReplays: the replay's write is conditioned
// on the version it measured, so a record that grew in between is
// measured again rather than replayed unmeasured.
func TestReplayMeasuresTheRecordItReplays(t *testing.T) {
	u := New(nil, "jobs", settings.Defaults()).replay(job.Replay{ID: "job_x", Attempts: 1}, 7)
	if !strings.Contains(u.cond, "#version = :v") || u.values[":v"].(*types.AttributeValueMemberN).Value != "7" {
		t.Fatalf("replay condition %q (:v %v) is not on the measured version", u.cond, u.values[":v"])
	}
}
