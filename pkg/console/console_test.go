package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/console"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/replay"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type clock struct{ at *atomic.Int64 }

func (c clock) Now() time.Time { return time.UnixMilli(c.at.Load()).UTC() }

// counting is the memory store, counting the overview's reads and the
// failure index's.
type counting struct {
	*memstore.Store
	recent, failures atomic.Int64
}

func (c *counting) Failures(ctx context.Context, q job.FailureQuery, each func(job.Failure) error) error {
	c.failures.Add(1)
	return c.Store.Failures(ctx, q, each)
}

func (c *counting) Recent(ctx context.Context, q job.RecentQuery, each func(job.Job) error) error {
	c.recent.Add(1)
	return c.Store.Recent(ctx, q, each)
}

type queue struct {
	mu   sync.Mutex
	sent []string
}

func (q *queue) Send(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, id)
	return nil
}

type depth int

func (d depth) Backlog(context.Context) (int, error) { return int(d), nil }

type fixture struct {
	store *counting
	queue *queue
	srv   *httptest.Server
	con   *console.Console
	log   *bytes.Buffer
	ids   map[string]string
	token string
	clock clock
}

const (
	token  = "test-token"
	access = "test-access"
)

// setup seeds one job per state: queued, running, succeeded, and failed
// and abandoned through the store's own transitions (so the failure index
// has them), and serves a console over them.
func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{store: &counting{Store: memstore.New()}, queue: &queue{}, log: &bytes.Buffer{}, ids: map[string]string{}, token: token,
		clock: clock{at: &atomic.Int64{}}}
	f.clock.at.Store(now.UnixMilli())
	ctx := context.Background()
	mk := func(key string, age time.Duration) job.Job {
		at := now.Add(-age)
		j := job.Job{ID: job.NewID("tenant-a", key), Tenant: "tenant-a", RequestKey: key, InputHash: "sha256:" + key[:1], Model: "default",
			Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`), State: job.Queued, MaxAttempts: 3,
			Budget: job.Cents(5), Reserve: 1000, Deadline: now.Add(time.Hour), Version: 1, CreatedAt: at, UpdatedAt: at}
		if _, err := f.store.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		f.ids[key] = j.ID
		return j
	}
	mk("queued", 10*time.Minute)
	r := mk("running", 5*time.Minute)
	claim := func(id string, at time.Time) {
		if _, err := f.store.Claim(ctx, job.Claim{ID: id, Owner: "w", Now: at, LeaseUntil: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	claim(r.ID, now.Add(-time.Minute))
	ok := mk("succeeded", 20*time.Minute)
	claim(ok.ID, now.Add(-19*time.Minute))
	if _, err := f.store.Succeed(ctx, job.Succeed{ID: ok.ID, Owner: "w", Now: now.Add(-18 * time.Minute), Settlement: job.Settlement{Cost: 700},
		Result: json.RawMessage(`{"output":"the answer"}`), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"failed1", "failed2"} {
		j := mk(k, 30*time.Minute)
		claim(j.ID, now.Add(-29*time.Minute))
		if _, err := f.store.End(ctx, job.End{ID: j.ID, Owner: "w", Now: now.Add(-28 * time.Minute), Settlement: job.Settlement{Cost: 2500, Held: 1000, Saved: 1250},
			Class: job.Overloaded, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	ab := mk("abandoned", 40*time.Minute)
	if _, err := f.store.Cancel(ctx, job.Cancel{ID: ab.ID, Tenant: "tenant-a", Now: now.Add(-39 * time.Minute), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rep := replay.New(replay.Config{Store: f.store, Queue: f.queue, Clock: f.clock, Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}})
	c, err := console.New(console.Config{Store: f.store, Queue: depth(3), DeadLetters: depth(2), Replayer: rep, Who: "arn:aws:iam::123456789012:user/ops",
		Log: slog.New(slog.NewTextHandler(f.log, nil)), Clock: f.clock, Token: token, Access: access,
		Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	f.con = c
	f.srv = httptest.NewServer(c)
	t.Cleanup(f.srv.Close)
	return f
}

// get and post carry the access token as a bearer token unless header
// sets Authorization itself.
func (f *fixture) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+access)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func (f *fixture) post(t *testing.T, path string, form url.Values, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+access)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func wantAll(t *testing.T, page, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("%s lacks %q", page, p)
		}
	}
}

func TestEveryPageRendersFromTheStore(t *testing.T) {
	f := setup(t)
	code, body := f.get(t, "/")
	if code != 200 {
		t.Fatalf("overview: %d %s", code, body)
	}
	wantAll(t, "overview", body, "<svg", "st-failed", "overloaded", "5", // two failures, 2 x 2500 nanocents... in cents
		`id="dlq-depth">2<`, "10m0s", f.ids["queued"], "as arn:aws:iam::123456789012:user/ops")
	code, body = f.get(t, "/failures")
	if code != 200 {
		t.Fatalf("failures: %d", code)
	}
	wantAll(t, "failures", body, "3 failed or abandoned jobs", `/failures/jobs?class=overloaded`, "sha256:f", "cancelled",
		"with 0.0000025 cents saved by cheaper lanes", `<td class="n">0.0000025</td>`) // two overloaded jobs' savings, from their records
	code, body = f.get(t, "/failures/jobs?class=overloaded&since=24h")
	if code != 200 {
		t.Fatalf("group: %d", code)
	}
	wantAll(t, "group", body, f.ids["failed1"], f.ids["failed2"], `name="csrf" value="test-token"`, `id="replay-group"`,
		"with 0.0000025 cents saved", `<td class="n">0.00000125</td>`)
	if strings.Contains(body, f.ids["abandoned"]) {
		t.Error("the overloaded group lists the cancelled job")
	}
	code, body = f.get(t, "/jobs?state=running")
	if code != 200 || !strings.Contains(body, f.ids["running"]) || strings.Contains(body, f.ids["queued"]) {
		t.Fatalf("jobs filtered by state: %d %s", code, body)
	}
	code, body = f.get(t, "/jobs?tenant=tenant-a&class=overloaded")
	if code != 200 || !strings.Contains(body, f.ids["failed1"]) || strings.Contains(body, f.ids["running"]) {
		t.Fatalf("a tenant's jobs: %d %s", code, body)
	}
	code, body = f.get(t, "/jobs/"+f.ids["succeeded"])
	if code != 200 {
		t.Fatalf("job page: %d", code)
	}
	wantAll(t, "job page", body, "the answer", "1 of 3", "0.0000007", `id="state">succeeded`)
	if strings.Contains(body, `id="cancel"`) {
		t.Error("a succeeded job offers a cancel")
	}
	if _, body = f.get(t, "/jobs/"+f.ids["running"]); !strings.Contains(body, `id="cancel"`) {
		t.Error("a running job offers no cancel")
	}
	if _, body = f.get(t, "/static/console.css"); !strings.Contains(body, ".chart") {
		t.Error("the stylesheet is not served from the binary")
	}
}

func TestALivePollGetsOnlyTheLivePart(t *testing.T) {
	f := setup(t)
	_, body := f.get(t, "/", "X-Console-Live", "1")
	if strings.Contains(body, "<html") || !strings.Contains(body, "<svg") {
		t.Fatalf("live part: %s", body)
	}
}

func TestTheOverviewReadsOncePerRefreshInterval(t *testing.T) {
	f := setup(t)
	f.get(t, "/")
	f.get(t, "/")
	f.get(t, "/jobs")
	if n := f.store.recent.Load(); n != 1 {
		t.Fatalf("%d reads in one interval, want 1", n)
	}
	f.clock.at.Add((5 * time.Second).Milliseconds())
	f.get(t, "/")
	if n := f.store.recent.Load(); n != 2 {
		t.Fatalf("%d reads after the interval, want 2", n)
	}
}

func problemCode(t *testing.T, body string) string {
	t.Helper()
	var p struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not problem+json: %q", body)
	}
	return p.Code
}

func TestAStateChangeWithoutTheTokenIsRefused(t *testing.T) {
	f := setup(t)
	id := f.ids["running"]
	for name, tc := range map[string]struct {
		form   url.Values
		header []string
	}{
		"no token":       {url.Values{}, nil},
		"another token":  {url.Values{"csrf": {"guess"}}, nil},
		"another origin": {url.Values{"csrf": {token}}, []string{"Origin", "http://evil.example"}},
	} {
		code, body := f.post(t, "/jobs/"+id+"/cancel", tc.form, tc.header...)
		if code != http.StatusForbidden || problemCode(t, body) != "csrf_refused" {
			t.Errorf("%s: %d %s", name, code, body)
		}
		code, body = f.post(t, "/replay", url.Values{"csrf": tc.form["csrf"], "ids": {f.ids["failed1"]}}, tc.header...)
		if code != http.StatusForbidden || problemCode(t, body) != "csrf_refused" {
			t.Errorf("%s replay: %d %s", name, code, body)
		}
	}
	if j, _ := f.store.Get(context.Background(), id); j.State != job.Running {
		t.Fatalf("a refused cancel changed the job: %s", j.State)
	}
	if j, _ := f.store.Get(context.Background(), f.ids["failed1"]); j.State != job.Failed || len(f.queue.sent) != 0 {
		t.Fatalf("a refused replay changed the job: %s, sent %v", j.State, f.queue.sent)
	}
	if strings.Contains(f.log.String(), "console action") {
		t.Fatalf("a refused request was logged as an action: %s", f.log)
	}
}

func TestCancelAbandonsTheJobAndLogsWhoDidIt(t *testing.T) {
	f := setup(t)
	id := f.ids["running"]
	code, _ := f.post(t, "/jobs/"+id+"/cancel", url.Values{"csrf": {token}}, "Origin", f.srv.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("cancel: %d", code)
	}
	j, _ := f.store.Get(context.Background(), id)
	if j.State != job.Abandoned || j.ErrorClass != job.Cancelled {
		t.Fatalf("cancelled job %s/%s", j.State, j.ErrorClass)
	}
	log := f.log.String()
	wantAll(t, "action log", log, "action=cancel", "job="+id, "who=arn:aws:iam::123456789012:user/ops", "result=cancelled")
	// Again: the job had already ended; said, not an error.
	if code, _ = f.post(t, "/jobs/"+id+"/cancel", url.Values{"csrf": {token}}); code != http.StatusSeeOther {
		t.Fatalf("second cancel: %d", code)
	}
	if _, body := f.get(t, "/jobs/"+id+"?done=already"); !strings.Contains(body, "had already abandoned") {
		t.Fatalf("second cancel page: %s", body)
	}
}

func TestReplayIsADryRunThenAConfirmation(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	ids := []string{f.ids["failed1"], f.ids["failed2"], f.ids["succeeded"]}
	code, body := f.post(t, "/replay/preview", url.Values{"csrf": {token}, "ids": ids})
	if code != 200 {
		t.Fatalf("dry run: %d %s", code, body)
	}
	// Each failed job has 5 cents of budget, 2500 nanocents spent: the
	// bound is what both have left.
	wantAll(t, "dry run", body, `id="dry-run"`, `data-outcome="replayed">2<`, `data-outcome="skipped_succeeded">1<`,
		`id="max-cost">9.999995<`, `id="confirm"`)
	if j, _ := f.store.Get(ctx, ids[0]); j.State != job.Failed || len(f.queue.sent) != 0 {
		t.Fatal("the dry run changed something")
	}
	code, body = f.post(t, "/replay", url.Values{"csrf": {token}, "ids": ids, "attempts": {"2"}})
	if code != 200 || !strings.Contains(body, `id="replayed"`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	for _, id := range ids[:2] {
		if j, _ := f.store.Get(ctx, id); j.State != job.Queued || j.Replays != 1 {
			t.Fatalf("replayed job %s: %s", id, j.State)
		}
	}
	if len(f.queue.sent) != 2 {
		t.Fatalf("sent %v", f.queue.sent)
	}
	wantAll(t, "action log", f.log.String(), `action="replay dry run"`, "action=replay ", "jobs=3")
}

func TestAFailureGroupIsReplayedFromTheIndex(t *testing.T) {
	f := setup(t)
	code, body := f.post(t, "/replay/preview", url.Values{"csrf": {token}, "group": {"1"}, "class": {"overloaded"}, "since": {"1h"}})
	if code != 200 {
		t.Fatalf("group dry run: %d %s", code, body)
	}
	wantAll(t, "group dry run", body, `data-outcome="replayed">2<`, "class overloaded", `name="ids" value="`+f.ids["failed1"])
}

func TestBadInputIsAProblemNeverAServerError(t *testing.T) {
	f := setup(t)
	for path, want := range map[string]int{
		"/jobs?state=nope":                400,
		"/jobs?class=nope":                400,
		"/jobs?since=yesterday":           400,
		"/jobs?tenant=t&cursor=zzz":       400,
		"/jobs/not-a-job":                 400,
		"/jobs/" + job.NewID("x", "none"): 404,
		"/failures?since=1h&until=2h":     400,
		"/failures/jobs?class=nope":       400,
		"/no/such/page":                   404,
	} {
		code, body := f.get(t, path)
		if code != want || problemCode(t, body) == "" {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
	for form, want := range map[string]string{
		"ids=bad":            "invalid_request",
		"":                   "invalid_request",
		"ids=x&attempts=0":   "invalid_request",
		"group=1&class=nope": "invalid_request",
	} {
		v, _ := url.ParseQuery(form)
		v.Set("csrf", token)
		code, body := f.post(t, "/replay/preview", v)
		if code != 400 || problemCode(t, body) != want {
			t.Errorf("replay form %q: %d %s", form, code, body)
		}
	}
}

func TestOnlyLoopbackByDefault(t *testing.T) {
	f := setup(t)
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req.Host = "console.evil.example:9090" // a rebinding page's own name
	code, body := do(t, req)
	if code != http.StatusForbidden || problemCode(t, body) != "host_refused" {
		t.Fatalf("foreign host: %d %s", code, body)
	}
	if host, _, _ := strings.Cut(console.DefaultAddr, ":"); host != "127.0.0.1" {
		t.Fatalf("default address %s is not loopback", console.DefaultAddr)
	}
	if _, err := console.Listen("0.0.0.0:0", false); err == nil {
		t.Fatal("listened on every interface without being allowed to")
	}
	ln, err := console.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	ln, err = console.Listen("0.0.0.0:0", true)
	if err != nil {
		t.Fatalf("allowed explicitly: %v", err)
	}
	ln.Close()
}
